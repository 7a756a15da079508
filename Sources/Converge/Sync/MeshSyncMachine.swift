/// What one device sends another in the mesh topology: its changes since the context the
/// peer last reported, and (as `delta.context`) its own whole context, which the peer
/// records as what the sender holds.
public struct SyncGossip: Hashable, Sendable {
    public var account: AccountID
    public var sender: ReplicaID
    public var delta: ReplicatedMap.Delta
    /// Whether the receiver should answer with its own changes (the first half of a
    /// push-pull exchange); an answer never asks for another.
    public var wantsReply: Bool

    public init(account: AccountID, sender: ReplicaID, delta: ReplicatedMap.Delta, wantsReply: Bool) {
        self.account = account
        self.sender = sender
        self.delta = delta
        self.wantsReply = wantsReply
    }
}

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
    /// What each peer reported holding, by peer.
    public private(set) var peerContexts: [ReplicaID: VersionVector] = [:]

    public init(device: ReplicaID, account: AccountID = .default) {
        self.device = device
        self.account = account
    }

    /// The gossip for `peer`: what it lacks of `state`, as far as it has reported.
    ///
    /// - Complexity: O(*n*) in the siblings of `state`.
    public func gossip(to peer: ReplicaID, from state: ReplicatedMap, wantsReply: Bool = true) -> SyncGossip {
        SyncGossip(account: account, sender: device, delta: state.delta(for: peerContexts[peer] ?? VersionVector()),
                   wantsReply: wantsReply)
    }

    /// Takes gossip from a peer: returns it if the device must apply it, or `nil` for gossip
    /// of another account or from itself (which must never be applied).
    public mutating func receive(_ gossip: SyncGossip) -> SyncGossip? {
        guard gossip.account == account, gossip.sender != device else { return nil }
        peerContexts[gossip.sender, default: VersionVector()].formUnion(gossip.delta.context)
        return gossip
    }

    /// Switches to another account: forget everything the peers of the old one reported.
    public mutating func switchAccount(to newAccount: AccountID) {
        account = newAccount
        peerContexts = [:]
    }
}
