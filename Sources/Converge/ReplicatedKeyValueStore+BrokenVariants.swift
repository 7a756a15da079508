// Deliberately broken behaviours, switched on only by the simulator runs and tests that show
// its checkers catch them. Behind `@_spi(Testing)`: an app never sees them.
extension ReplicatedKeyValueStore {
    /// Every removal is accepted and does nothing.
    @_spi(Testing) public var _removesAreNoOps: Bool {
        get { state.withLock { $0.brokenRemoves } }
        set { state.withLock { $0.brokenRemoves = newValue } }
    }

    /// Switching to an account drops the keys of its kept-aside data that only this device
    /// wrote.
    @_spi(Testing) public var _accountSwitchDropsOwnOnlyKeys: Bool {
        get { state.withLock { $0.brokenAccountSwitch } }
        set { state.withLock { $0.brokenAccountSwitch = newValue } }
    }

    /// Switching away from an account keeps nothing of it aside: what the hub lacks of it is
    /// gone (the device would download the rest again when it comes back).
    @_spi(Testing) public var _accountSwitchForgetsOldData: Bool {
        get { state.withLock { $0.forgetfulAccountSwitch } }
        set { state.withLock { $0.forgetfulAccountSwitch = newValue } }
    }

    /// Switching to an account keeps the old account's data too, merged into the new one's.
    @_spi(Testing) public var _accountSwitchKeepsOldData: Bool {
        get { state.withLock { $0.leakyAccountSwitch } }
        set { state.withLock { $0.leakyAccountSwitch = newValue } }
    }

    /// A store over its quota (merges took it there: the mesh's soft quota) accepts writes
    /// that grow usage.
    @_spi(Testing) public var _growsWhileOverQuota: Bool {
        get { state.withLock { $0.brokenSoftQuota } }
        set { state.withLock { $0.brokenSoftQuota = newValue } }
    }

    /// Merging keeps this store's siblings of every key it already holds and takes only the
    /// other side's new keys and context: a join biased to the left.
    @_spi(Testing) public var _joinKeepsOwnSiblings: Bool {
        get { state.withLock { $0.brokenJoin } }
        set { state.withLock { $0.brokenJoin = newValue } }
    }

    /// The store never finds its counters reused (a disk restored from an older copy): it
    /// keeps its writer ID and takes what peers send as if it held all they know of it.
    @_spi(Testing) public var _ignoresReusedCounters: Bool {
        get { state.withLock { $0.blindToReusedCounters } }
        set { state.withLock { $0.blindToReusedCounters = newValue } }
    }

    /// In the mesh, the store compares counters only, not write sessions: it neither
    /// refuses a peer's gossip whose sessions disagree with that peer's earlier gossip nor
    /// names or checks tips (``SyncGossip/recipientTip``), as before the mesh compared them.
    @_spi(Testing) public var _meshIgnoresWriterSessions: Bool {
        get { state.withLock { $0.meshMachine._ignoresWriterSessions } }
        set { state.withLock { $0.meshMachine._ignoresWriterSessions = newValue } }
    }

    /// A hub's reply written relative to what the device holds (``SyncReply/relativeTo``) is
    /// joined with whatever hub context and frontier the device holds now, without checking
    /// that the reply was written relative to exactly them.
    @_spi(Testing) public var _resolvesRelativeRepliesBlindly: Bool {
        get { state.withLock { $0.resolvesRelativeRepliesBlindly } }
        set { state.withLock { $0.resolvesRelativeRepliesBlindly = newValue } }
    }

    /// `a` joined with `b` as this store joins what it receives (left-biased under
    /// ``_joinKeepsOwnSiblings``): what the simulator's CRDT-law checker tests.
    @_spi(Testing) public func _joined(_ a: ReplicatedMap, _ b: ReplicatedMap) -> ReplicatedMap {
        var result = a
        if state.withLock({ $0.brokenJoin }) {
            _ = result.join(State.leftBiased(b, over: a))
        } else {
            _ = result.join(b)
        }
        return result
    }
}

extension ReplicatedKeyValueStore.State {
    /// What a left-biased join takes of `other`: its siblings of keys `own` does not hold,
    /// and its whole context (``ReplicatedKeyValueStore/_joinKeepsOwnSiblings``): it claims to
    /// have seen the writes it left out.
    static func leftBiased(_ other: ReplicatedMap, over own: ReplicatedMap) -> ReplicatedMap {
        let entries = other.entries.filter { own.entries[$0.key] == nil }
        return (try? ReplicatedMap(entries: entries, context: other.context)) ?? other
    }
}

extension SyncMessage {
    /// This message as a store under ``ReplicatedKeyValueStore/_resolvesRelativeRepliesBlindly``
    /// takes it: a relative reply joined with what `machine` holds, whatever that is.
    func resolvedBlindly(by machine: DeviceSyncMachine) -> SyncMessage {
        guard case .reply(var reply) = self, reply.relativeTo != nil else { return self }
        reply.delta.context.formUnion(machine.hubContext)
        reply.stableFrontier.formUnion(machine.stableFrontier)
        reply.relativeTo = nil
        return .reply(reply)
    }
}
