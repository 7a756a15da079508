/// What a device must do about one message its sync state machine received.
///
/// ``DeviceSyncMachine`` and ``MeshSyncMachine`` turn every input into a list of actions,
/// in the order they must be carried out (as SwiftNIO's state machines return actions),
/// so one place, the store, carries them out for every transport and topology.
public enum SyncAction: Hashable, Sendable {
    /// Join these changes key by key and report the keys whose visible values changed as
    /// ``ChangeReason/serverChange``.
    case applyDelta(ReplicatedMap.Delta)
    /// Join this page of a larger delta key by key, its partial keys without dropping
    /// anything (see ``ReplicatedMap/apply(_:partialKeys:)``), and report as
    /// ``applyDelta(_:)`` does.
    case applyPage(ReplicatedMap.Delta, partialKeys: [String])
    /// Join this whole state of the hub, or the page of it that answers for `keys`,
    /// dropping every sibling (of those keys) it has seen and no longer has (the device
    /// returns after retirement), and report ``ChangeReason/initialSyncChange``, even if no
    /// visible value changed.
    case joinFullState(ReplicatedMap.Delta, keys: KeySpan)
    /// Drop every write of `writer` from counter `from` on, and lower the context to below
    /// it: a copy of that writer's store issued those counters again and re-stamped its own
    /// writes under a new writer ID (see ``SessionRecord``); the other copy's writes under
    /// them are fetched again.
    case withdraw(writer: ReplicaID, from: UInt64)
    /// Re-stamp these writes, by key, under the device's own writer ID (new counters, in
    /// counter order, keeping values and timestamps) and hold them beside what the device
    /// holds, reporting as ``applyDelta(_:)`` does: writes of the first writer ID of the
    /// device's replica that no copy of its store holds any more, which the device
    /// adopts (see ``MeshSyncMachine/receive(_:as:holding:holds:)``). The machine has
    /// withdrawn their old counters by then, so whoever carries out the actions must adopt
    /// them: a store does.
    case adopt([String: [Sibling]])
    /// Drop the tombstones this stable frontier covers.
    case collectTombstones(below: VersionVector)
    /// Report these keys as ``ChangeReason/quotaViolationChange``: the hub superseded this
    /// device's writes of them with compensating writes to keep the quota.
    case reportRejectedKeys([String])
    /// Answer `peer` with the gossip it lacks (the second half of a push-pull exchange),
    /// computed after the actions before this one.
    case answer(peer: ReplicaID)
    /// Do nothing: the message must not be applied.
    case ignore(SyncIgnoredReason)
}

/// Why a sync state machine ignored a message.
public enum SyncIgnoredReason: Hashable, Sendable {
    /// The message belongs to another account than the device's (it may have switched
    /// while the message travelled); applying it would leak that account's data.
    case otherAccount(AccountID)
    /// Gossip the device sent itself.
    case fromSelf
    /// A message this side of the protocol never receives (a push at a device, a reply
    /// in the mesh).
    case unexpected
    /// Gossip whose sender's write sessions name another session, for a counter of its
    /// writer ID, than the sender's earlier gossip did: two copies of one store write under
    /// one ID (a restored or copied store), and the device would take one copy's writes
    /// for the other's it holds. See ``MeshSyncMachine/receive(_:as:holding:holds:)``.
    case reusedCounters
    /// Gossip computed for what another writer ID of this device reported (an earlier
    /// incarnation, or a twin under the same replica ID, see ``SyncGossip/recipient``): the
    /// device may lack writes that report claimed.
    case otherIncarnation
    /// Gossip computed for more than the device holds (see ``SyncGossip/basis``): its
    /// storage went back (a restored backup, a replaced or copied disk) since it reported
    /// what the sender computed the gossip for, and it would miss the writes between.
    case staleReport
    /// A hub's reply written relative to a hub context and stable frontier the device no
    /// longer holds exactly (``SyncReply/relativeTo``): it took another reply since it
    /// polled or pushed. Nothing is lost: the next exchange starts from what the device holds.
    case staleRelativeReply
}
