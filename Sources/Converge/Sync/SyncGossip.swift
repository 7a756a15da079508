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
