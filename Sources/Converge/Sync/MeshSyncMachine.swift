/// One device's side of the mesh topology (devices gossip with each other, no hub), as a
/// pure state machine.
///
/// It remembers, per peer, the context that peer *reported* in its last gossip, and
/// computes what it sends a peer for exactly that context: never a guessed one. Lost,
/// duplicated and reordered gossip is harmless for the same reasons as in the hub
/// topology. There is no authority, so the quota is soft (see ``Quota``): merged state
/// may exceed it, every replica flags it identically, and local writes that grow usage
/// are refused until it is back under. Tombstones are kept: without a membership that
/// every device agrees on, no device can know a tombstone is stable.
public struct MeshSyncMachine: Hashable, Sendable {
    /// This device's replica ID.
    public let device: ReplicaID
    /// The account the device syncs.
    public private(set) var account: AccountID
    /// What each peer last reported holding, by peer.
    public private(set) var peerContexts: [ReplicaID: VersionVector] = [:]

    /// A machine that has heard from no peer yet: its first gossip to each is the device's
    /// whole state.
    public init(device: ReplicaID, account: AccountID = .default) {
        self.device = device
        self.account = account
    }

    /// The gossip for `peer`: what it lacks of `state`, as far as it has reported.
    ///
    /// - Parameters:
    ///   - peer: The peer the gossip is for.
    ///   - state: The device's state.
    ///   - wantsReply: Whether `peer` should answer with its own changes.
    /// - Complexity: O(*n*) in the siblings of `state`.
    public func gossip(to peer: ReplicaID, from state: ReplicatedMap, wantsReply: Bool = true) -> SyncGossip {
        SyncGossip(account: account, sender: device, delta: state.delta(for: peerContexts[peer] ?? VersionVector()),
                   wantsReply: wantsReply)
    }

    /// The gossip for every reader of a broadcast medium, such as a shared folder, where
    /// this device publishes a sequence of messages that readers apply in order.
    ///
    /// A reader of the sequence holds the device's previous message when it reads the next,
    /// so each message carries what is new since the previous one, as far as the medium
    /// reports it: `published` is the context of the device's latest message that the
    /// medium holds, never a guess. With `published` `nil` (the medium holds nothing
    /// readable of this device, or a new sequence starts) the gossip is the whole state,
    /// which any reader can apply.
    ///
    /// - Parameters:
    ///   - state: The device's state.
    ///   - published: The context of the device's latest message in the medium, or `nil`.
    /// - Returns: The gossip, or `nil` if the medium already holds everything of `state`.
    /// - Complexity: O(*n*) in the siblings of `state`.
    public func broadcast(from state: ReplicatedMap, after published: VersionVector?) -> SyncGossip? {
        guard let published else {
            return SyncGossip(account: account, sender: device, delta: state.asDelta, wantsReply: false)
        }
        // Nothing can be new if the context is: every sibling's dot is in it.
        guard state.context != published else { return nil }
        return SyncGossip(account: account, sender: device, delta: state.delta(for: published), wantsReply: false)
    }

    /// Takes a message from a peer and returns what the device must do, in order: apply
    /// gossip of its account from another device (recording the sender's context as what
    /// it holds), then answer the sender if it asked. Anything else is ignored.
    ///
    /// - Complexity: O(*r*) in the replicas of the gossip's context.
    public mutating func receive(_ message: SyncMessage) -> [SyncAction] {
        guard case .gossip(let gossip) = message else { return [.ignore(.unexpected)] }
        guard gossip.account == account else { return [.ignore(.otherAccount(gossip.account))] }
        guard gossip.sender != device else { return [.ignore(.fromSelf)] }
        // The latest report, not the union of all: a peer's context shrinks for its own
        // writer ID when it starts a new incarnation (a restored store), and a delta computed
        // for more than it holds would miss what it lost. A stale report is always safe.
        peerContexts[gossip.sender] = gossip.delta.context
        return gossip.wantsReply ? [.applyDelta(gossip.delta), .answer(peer: gossip.sender)] : [.applyDelta(gossip.delta)]
    }

    /// Switches to another account: forget everything the peers of the old one reported.
    public mutating func switchAccount(to newAccount: AccountID) {
        account = newAccount
        peerContexts = [:]
    }
}
