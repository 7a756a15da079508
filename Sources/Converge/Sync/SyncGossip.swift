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
    /// Whether the receiver should answer with its own changes (the first half of a
    /// push-pull exchange); an answer never asks for another.
    public var wantsReply: Bool
    /// Which write sessions issued the sender's recent counters (see ``WriterSessions``):
    /// a replica that reads its own earlier message in a shared folder compares them with
    /// its own, which shows a restored or copied store that issued as many counters as the
    /// one that wrote the file. Empty when the sender records none.
    public var writerSessions = WriterSessions()

    /// Creates gossip; ``MeshSyncMachine`` makes it for a device.
    public init(account: AccountID, sender: ReplicaID, delta: ReplicatedMap.Delta, wantsReply: Bool) {
        self.account = account
        self.sender = sender
        self.delta = delta
        self.wantsReply = wantsReply
    }
}
