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
///
/// Write sessions (see ``WriterSessions``): a peer's gossip names the sessions that issued
/// its writer ID's recent counters; the machine records them per peer it heard from
/// directly (not from a broadcast such as a shared folder's file, which wants no reply and
/// names no recipient), up to the highest counter of that writer ID the peer's context reached. Gossip
/// whose sessions name another session for a counter both reach proves two copies of one
/// store writing under one ID: it is not applied (before it could make the device take the
/// copy's writes for ones it holds), and the sender is answered. Every gossip to a peer
/// names what the machine recorded of that peer's highest counter
/// (``SyncGossip/recipientTip``), so a restored or copied store that issued as many
/// counters as it lost finds out, as it does from a hub's ``SyncReply/sessionTip``. The
/// records live in memory: a restarted device records them again from the next gossip.
public struct MeshSyncMachine: Hashable, Sendable {
    /// This device's replica ID.
    public let device: ReplicaID
    /// The account the device syncs.
    public private(set) var account: AccountID
    /// What each peer last reported holding, by peer.
    public private(set) var peerContexts: [ReplicaID: VersionVector] = [:]
    /// What each peer's gossip named of the sessions that issued its writer ID's counters,
    /// by peer (replica ID).
    private(set) var peerSessions: [ReplicaID: PeerSessions] = [:]
    /// The writer ID each peer's last gossip was of, by peer: ``peerContexts`` is its report
    /// (none after a report of another copy was refused: the next gossip is the whole state).
    private(set) var peerWriters: [ReplicaID: ReplicaID] = [:]

    /// A peer's write sessions as its gossip named them.
    struct PeerSessions: Hashable, Sendable {
        /// The peer's writer ID the runs are of.
        var writer: ReplicaID
        /// The runs, continued from gossip to gossip.
        var runs: WriterSessions
        /// The highest counter of `writer` the runs are known to reach (the peer's context
        /// when it sent them).
        var through: UInt64

        /// The session that issued ``through``.
        var tip: WriterSessions.Tip? {
            runs.session(at: through).map { WriterSessions.Tip(counter: through, session: $0) }
        }
    }

    /// A machine that has heard from no peer yet: its first gossip to each is the device's
    /// whole state.
    public init(device: ReplicaID, account: AccountID = .default) {
        self.device = device
        self.account = account
    }

    /// The gossip for `peer`: what it lacks of `state`, as far as it has reported, with
    /// the device's write sessions and what the machine recorded of the peer's
    /// (``SyncGossip/recipientTip``).
    ///
    /// - Parameters:
    ///   - peer: The peer the gossip is for.
    ///   - state: The device's state.
    ///   - wantsReply: Whether `peer` should answer with its own changes.
    ///   - writer: The device's writer ID, which `writerSessions` are of (named in the
    ///     gossip when it is not ``device``).
    ///   - writerSessions: The sessions that issued the device's recent counters.
    /// - Complexity: O(*n*) in the siblings of `state`.
    public func gossip(to peer: ReplicaID, from state: ReplicatedMap, wantsReply: Bool = true, writer: ReplicaID? = nil,
                       writerSessions: WriterSessions = WriterSessions()) -> SyncGossip {
        var gossip = SyncGossip(account: account, sender: device, delta: state.delta(for: peerContexts[peer] ?? VersionVector()),
                                wantsReply: wantsReply)
        gossip.writerSessions = writerSessions
        if let writer, writer != device { gossip.writer = writer }
        gossip.recipient = peerWriters[peer]
        if !_ignoresWriterSessions, let known = peerSessions[peer], known.writer == gossip.recipient, let tip = known.tip {
            gossip.recipientTip = tip
        }
        return gossip
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
    /// it holds, and its write sessions), then answer the sender if it asked. Gossip whose
    /// write sessions disagree with what the sender's earlier gossip named is not applied
    /// (``SyncIgnoredReason/reusedCounters``): the device answers it, so the sender learns
    /// the tip it contradicts. Anything else is ignored.
    ///
    /// Gossip computed for what another writer ID of the device reported
    /// (``SyncGossip/recipient``) is not applied either
    /// (``SyncIgnoredReason/otherIncarnation``); the sender's report is recorded, and the
    /// device answers if asked, so the sender learns what the device holds now.
    ///
    /// - Parameters:
    ///   - message: The message from a peer.
    ///   - writer: The device's current writer ID, or `nil` not to check the gossip's
    ///     recipient.
    /// - Returns: The actions, in order.
    /// - Complexity: O(*r*) in the replicas of the gossip's context, plus O(*s*²) in the
    ///   sessions' runs (at most ``WriterSessions/maximumRuns``).
    public mutating func receive(_ message: SyncMessage, as writer: ReplicaID? = nil) -> [SyncAction] {
        guard case .gossip(let gossip) = message else { return [.ignore(.unexpected)] }
        guard gossip.account == account else { return [.ignore(.otherAccount(gossip.account))] }
        guard gossip.sender != device else { return [.ignore(.fromSelf)] }
        // A broadcast (a shared folder's file: no reply wanted, no recipient) is read by
        // anyone in sequence, and its reader compares its own files' sessions itself
        // (`checkOwnHistory`): only gossip between two devices is
        // compared and recorded.
        let betweenTwo = gossip.wantsReply || gossip.recipient != nil
        if betweenTwo && reusesCounters(gossip) {
            // The sender's report came from another copy than its earlier ones: forget them,
            // so the answer and the next gossip carry everything.
            peerContexts[gossip.sender] = nil
            // The answer names the refused report's writer ID, so it carries the recorded tip
            // that shows the copy its reuse (not the writer ID of a third copy heard since).
            peerWriters[gossip.sender] = gossip.writer ?? gossip.sender
            return [.ignore(.reusedCounters), .answer(peer: gossip.sender)]
        }
        if betweenTwo { recordSessions(of: gossip) }
        if let recipient = gossip.recipient, let writer, recipient != writer {
            peerContexts[gossip.sender] = gossip.delta.context
            peerWriters[gossip.sender] = gossip.writer ?? gossip.sender
            return gossip.wantsReply ? [.ignore(.otherIncarnation), .answer(peer: gossip.sender)] : [.ignore(.otherIncarnation)]
        }
        // The latest report, not the union of all: a peer's context shrinks for its own
        // writer ID when it starts a new incarnation (a restored store), and a delta computed
        // for more than it holds would miss what it lost. A stale report is always safe.
        peerContexts[gossip.sender] = gossip.delta.context
        peerWriters[gossip.sender] = gossip.writer ?? gossip.sender
        return gossip.wantsReply ? [.applyDelta(gossip.delta), .answer(peer: gossip.sender)] : [.applyDelta(gossip.delta)]
    }

    /// Whether `gossip`'s write sessions name another session, for a counter of its
    /// writer ID both reach, than the sender's earlier gossip did.
    ///
    /// - Parameter gossip: Gossip from a peer.
    /// - Returns: Whether the sender's counters were issued twice.
    public func reusesCounters(_ gossip: SyncGossip) -> Bool {
        guard !_ignoresWriterSessions, let known = peerSessions[gossip.sender],
              known.writer == gossip.writer ?? gossip.sender else { return false }
        return gossip.writerSessions.disagrees(with: known.runs, through: min(known.through, gossip.delta.context[known.writer]))
    }

    /// Records the sender's write sessions, when they reach its context's counter of its
    /// writer ID and go as far as the record.
    private mutating func recordSessions(of gossip: SyncGossip) {
        let writer = gossip.writer ?? gossip.sender
        let own = gossip.delta.context[writer]
        guard own > 0, gossip.writerSessions.session(at: own) != nil else { return }
        let known = peerSessions[gossip.sender].flatMap { $0.writer == writer ? $0 : nil }
        guard own >= known?.through ?? 0 else { return }
        peerSessions[gossip.sender] = PeerSessions(writer: writer, runs: gossip.writerSessions.continuing(known?.runs ?? WriterSessions()),
                                                   through: own)
    }

    /// Switches to another account: forget everything the peers of the old one reported.
    ///
    /// - Parameter newAccount: The account to sync from now on.
    public mutating func switchAccount(to newAccount: AccountID) {
        account = newAccount
        peerContexts = [:]
        peerSessions = [:]
        peerWriters = [:]
    }

    /// A broken variant for tests: the machine neither refuses gossip whose sessions
    /// disagree with its record nor names tips (the mesh as it was before it compared
    /// write sessions).
    @_spi(Testing) public var _ignoresWriterSessions = false
}
