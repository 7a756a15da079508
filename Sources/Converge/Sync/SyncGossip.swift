/// What one device sends another in the mesh topology: its changes since the context the
/// peer last reported, and (as `delta.context`) its own whole context, which the peer
/// records as what the sender holds.
public struct SyncGossip: Hashable, Sendable {
    /// The account the gossip belongs to; a device of another account ignores it.
    public var account: AccountID
    /// The device that sent it.
    public var sender: ReplicaID
    /// The sender's changes the receiver lacks, with the sender's whole context.
    public var delta: ReplicatedMap.Delta
    /// The context ``delta`` was computed for: what the receiver last reported holding, or
    /// `nil` if it reported nothing (the delta is then the sender's whole state). A receiver
    /// that holds less than its report (its disk was restored from a backup, replaced, or
    /// copied from another device's) would miss the writes between, so it applies nothing
    /// and answers with what it holds (``SyncIgnoredReason/staleReport``).
    public var basis: VersionVector?
    /// Whether the receiver should answer with its own changes (the first half of a
    /// push-pull exchange); an answer never asks for another.
    public var wantsReply: Bool
    /// Which write sessions issued the sender's recent counters (see ``WriterSessions``):
    /// a replica that reads its own earlier message in a shared folder compares them with
    /// its own, which shows a restored or copied store that issued as many counters as the
    /// one that wrote the file. Empty when the sender records none.
    public var writerSessions = WriterSessions()
    /// The sender's writer ID, which ``writerSessions`` are of, when it is not ``sender``
    /// (the sender started a new incarnation, see ``ReplicatedKeyValueStore/writerID``);
    /// `nil` otherwise. A receiver compares runs only with those it recorded of the same
    /// writer ID, and names it as the ``recipient`` of its gossip to the sender.
    public var writer: ReplicaID?
    /// The receiver's writer ID whose report (its last gossip's context) ``delta`` was
    /// computed for, or `nil` if the receiver reported nothing (the delta is then the
    /// sender's whole state; after a refused report it is too, and this names the writer ID
    /// of that report). A receiver under another writer ID (it started a new
    /// incarnation since, or it is a twin under one replica ID) may lack writes that report
    /// claimed, so it applies nothing and answers with its own context.
    public var recipient: ReplicaID?
    /// What the sender recorded, from ``recipient``'s earlier gossip, of the session that
    /// issued `recipient`'s highest counter the sender holds (see ``MeshSyncMachine``); `nil`
    /// if it recorded nothing. A receiver whose own record names another session for that
    /// counter has had its counters reused (it is a restored or copied store): it starts a
    /// new incarnation and applies nothing of the gossip, as for ``SyncReply/sessionTip``.
    /// Never without ``recipient``.
    public var recipientTip: WriterSessions.Tip?
    /// What the sender knows of which sessions issued the counters of the writer IDs it
    /// holds writes of, other than its own (see ``SessionRecord``), one record per writer ID
    /// in increasing order; empty from a sender that records none. A receiver whose record
    /// of one of them names another session for a counter both reach takes nothing of the
    /// gossip: one of the two devices holds a copy's writes under the other's dots.
    public var relayedSessions: [SessionRecord] = []
    /// Counters withdrawn, as the sender knows: each record names a writer ID's runs from
    /// the first counter a copy of its store re-stamped under a new writer ID (its runs'
    /// first counter) through the last it issued. A receiver whose record of that writer ID
    /// agrees with one drops that writer's writes from its first counter on, and fetches the
    /// other copy's again; gossip from a peer whose record agrees with one is not applied.
    /// In increasing order of writer ID, then first counter.
    public var withdrawnSessions: [SessionRecord] = []

    /// Creates gossip; ``MeshSyncMachine`` makes it for a device.
    public init(account: AccountID, sender: ReplicaID, delta: ReplicatedMap.Delta, wantsReply: Bool) {
        self.account = account
        self.sender = sender
        self.delta = delta
        self.wantsReply = wantsReply
    }

    /// Whether this is gossip between two devices (it wants a reply, or names its
    /// recipient) rather than a broadcast: a shared folder's file, read by anyone in
    /// sequence, whose reader compares its own files' sessions itself.
    var isBetweenTwoDevices: Bool { wantsReply || recipient != nil }
}
