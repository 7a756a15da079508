/// Writing: every change a store makes goes through ``performWrite(_:)``, which is how
/// several store objects (in one process or in several) share one storage without ever
/// issuing a dot twice or rolling each other back.
///
/// One write, in order: this object's writer lock is taken (its writes go one at a time);
/// the storage opens its exclusive write transaction and hands over what other writers
/// committed since this object last looked; that catch-up is put in place and reported as
/// external changes; the write is planned on the caught-up state (the next counter is
/// read there, inside the transaction); the storage commits it; only then is it put in
/// place in memory. The state lock is held only to catch up, to plan and to install,
/// never while the storage syncs to disk, so readers on other threads do not wait for an
/// fsync. A store whose storage keeps nothing (``ReplicatedKeyValueStore/storageKeepsNothing``)
/// has nothing to catch up with or commit: it plans and installs under one hold of the lock.
extension ReplicatedKeyValueStore {
    /// A planned write: what to record, and what to report once it is committed.
    struct WritePlan<Result: Sendable>: Sendable {
        /// What the storage records and memory then takes; `nil` changes nothing durable.
        var record: PlannedRecord?
        /// The sync machines after the write (they record what a hub or peers reported),
        /// or `nil` to keep them. Boxed: a plan is moved at every write, and the machines
        /// are large (inline, they were most of the bytes a local write copied).
        var machines: PlannedMachines?
        /// Events to emit once the write is in place.
        var events: [StoreEvent] = []
        /// What the write returns.
        var result: Result

        init(update: StorageUpdate? = nil, machines: (hub: DeviceSyncMachine, mesh: MeshSyncMachine)? = nil,
             events: [StoreEvent] = [], result: Result) {
            self.record = update.map(PlannedRecord.update)
            self.machines = machines.map { PlannedMachines(hub: $0.hub, mesh: $0.mesh) }
            self.events = events
            self.result = result
        }

        /// A plan that writes one key, and changes nothing else.
        init(localWrite: LocalWrite, result: Result) {
            self.record = .localWrite(localWrite)
            self.result = result
        }
    }

    /// What a plan records: any update, or the write of one key by this store object.
    enum PlannedRecord: Sendable {
        /// An update as the storage records it.
        case update(StorageUpdate)
        /// A write of one key, handed to the storage as a change (``LocalWrite/storageChange``).
        case localWrite(LocalWrite)

        /// What the storage records.
        var storageUpdate: StorageUpdate {
            switch self {
            case .update(let update): return update
            case .localWrite(let write): return .change(write.storageChange)
            }
        }
    }

    /// One key written by this store object (``setValue(_:forKey:)``), kept as it is: memory
    /// takes it without the dictionaries of a ``StorageChange`` (one of one key, one of one
    /// counter), which a write would otherwise build, hash, walk and free.
    struct LocalWrite: Sendable {
        /// The key written.
        let key: String
        /// The key's one sibling after the write (it replaces every other); its dot's counter
        /// is the writer's new counter in the context, and its timestamp the clock's. An
        /// array of exactly one, made once by the initialiser, so that installing the write
        /// moves it into the map instead of allocating another.
        let siblings: [Sibling]
        /// Metadata records to set (the sessions record, at a session's first write).
        let metadata: [String: [UInt8]?]

        init(key: String, sibling: Sibling, metadata: [String: [UInt8]?]) {
            self.key = key
            self.siblings = [sibling]
            self.metadata = metadata
        }

        /// The write as a change for a storage: only the writer's counter changes, so it
        /// costs the same whatever the size of the context.
        var storageChange: StorageChange {
            let dot = siblings[0].dot
            return StorageChange(entries: [key: siblings], contextCounters: [dot.replica: dot.counter], clock: siblings[0].timestamp,
                                 metadata: metadata)
        }
    }

    /// The sync machines a plan puts in place.
    final class PlannedMachines: Sendable {
        let hub: DeviceSyncMachine
        let mesh: MeshSyncMachine

        init(hub: DeviceSyncMachine, mesh: MeshSyncMachine) {
            self.hub = hub
            self.mesh = mesh
        }
    }

    /// Carries out one write: catches up with the storage's other writers, plans the write
    /// with `plan` on the caught-up state, commits it and puts it in place. With a storage
    /// that keeps nothing (``storageKeepsNothing``) there is nothing to catch up with or
    /// commit: it plans and puts the plan in place under one hold of the state lock.
    ///
    /// - Parameter plan: Called with the state lock held, on a caught-up state it must not
    ///   change (it plans on copies).
    /// - Throws: What `plan` or the storage throws; this object's state then holds what
    ///   other writers committed (reported as external changes) and nothing of this write.
    @discardableResult
    func performWrite<Result: Sendable>(_ plan: (State) throws(ConvergeError) -> WritePlan<Result>) throws(ConvergeError) -> Result {
        var events: [StoreEvent] = []
        defer { emit(events) }
        return try storageSequence.withLock { (seen: inout UInt64) throws(ConvergeError) -> Result in
            if storageKeepsNothing {
                // What the storage's `write(since:_:)` comes to, without calling it: it keeps
                // nothing, so there is never anything to catch up with nor any change to build
                // for it, and the plan is put in place as soon as it is made.
                return try state.withLock { (state: inout State) throws(ConvergeError) -> Result in
                    let planned = try plan(state)
                    state.putInPlace(planned)
                    if !planned.events.isEmpty { events += planned.events }
                    return planned.result
                }
            }
            let planned = try plannedAndCommitted(plan, seen: &seen, events: &events)
            state.withLock { $0.putInPlace(planned) }
            if !planned.events.isEmpty { events += planned.events }
            return planned.result
        }
    }

    /// The storage's part of ``performWrite(_:)``: catches up with the storage's other
    /// writers, plans with `plan` and has the storage commit the plan's record.
    ///
    /// - Parameters:
    ///   - seen: The storage's sequence number this object has seen, updated.
    ///   - events: Where the events of the catch-up go.
    private func plannedAndCommitted<Result: Sendable>(_ plan: (State) throws(ConvergeError) -> WritePlan<Result>, seen: inout UInt64,
                                                       events: inout [StoreEvent]) throws(ConvergeError) -> WritePlan<Result> {
        var planned: WritePlan<Result>?
        var caughtUp = seen
        do throws(ConvergeError) {
            seen = try storage.write(since: seen) { (catchUp: StorageCatchUp) throws(ConvergeError) -> StorageUpdate? in
                caughtUp = catchUp.sequence
                if let update = catchUp.update {
                    events += state.withLock { $0.takeCatchUp(update) }.events
                }
                let plan = try state.withLock { (state: inout State) throws(ConvergeError) -> WritePlan<Result> in try plan(state) }
                let update = plan.record?.storageUpdate
                planned = consume plan
                return update
            }
        } catch {
            seen = caughtUp
            throw error
        }
        guard let planned = planned.take() else { return try unreachable() }
        return planned
    }

    /// A storage that returns from a write without calling its body breaks its contract.
    private func unreachable<T>() throws(ConvergeError) -> T {
        throw .storage(.other, path: "\(type(of: storage))", operation: .write, detail: "the storage committed a write without planning it")
    }

    /// Takes what other processes or store objects sharing this store's storage wrote
    /// since this object last looked, and reports it: `didChangeExternallyNotification`
    /// with ``ChangeReason/serverChange`` for the keys whose visible values changed (as
    /// `UserDefaults` tells one process of another's writes), ``ChangeReason/accountChange``
    /// if another writer switched accounts, and conflicts.
    ///
    /// Every write, ``sync()`` and ``synchronize()`` does this first; call it to notice
    /// other writers' changes without writing (a widget waking up, a `watch` loop).
    ///
    /// - Returns: The keys whose visible values changed, in UTF-8 byte order.
    /// - Throws: The storage's error; the store is then unchanged.
    /// - Complexity: O(1) when nothing changed; otherwise O(*k*) in the keys changed (all
    ///   keys for a storage that was rewritten, such as an account switch).
    @discardableResult
    public func refresh() throws(ConvergeError) -> [String] {
        var outcome = MergeOutcome()
        defer { emit(outcome.events) }
        try storageSequence.withLock { (seen: inout UInt64) throws(ConvergeError) in
            let catchUp = try storage.catchUp(since: seen)
            seen = catchUp.sequence
            guard let update = catchUp.update else { return }
            outcome = state.withLock { $0.takeCatchUp(update) }
        }
        return outcome.visibleChanges
    }
}

extension ReplicatedKeyValueStore.State {
    /// Puts in place a plan the storage committed (or, with a storage that keeps nothing,
    /// one just made): its sync machines, then what it records.
    mutating func putInPlace<Result>(_ planned: ReplicatedKeyValueStore.WritePlan<Result>) {
        if let machines = planned.machines {
            hubMachine = machines.hub
            meshMachine = machines.mesh
        }
        // After the machines: an update that starts a new incarnation replaces the hub's.
        switch planned.record {
        case .update(let update)?: install(update)
        case .localWrite(let write)?: install(write)
        case nil: break
        }
        _checkInvariants()
    }

    /// Puts in place an update the storage committed (this object's own write, or another
    /// writer's), advancing the clock past every timestamp it holds and following an
    /// account switch recorded in it.
    mutating func install(_ update: StorageUpdate) {
        switch update {
        case .change(let change):
            map.replaceEntries(change.entries, settingCounters: change.contextCounters, wholeContext: change.replacesContext)
            clock.observe(change.clock)
            for siblings in change.entries.values { for sibling in siblings { clock.observe(sibling.timestamp) } }
            // Most writes change no metadata, so neither the sessions record, the writer ID
            // nor the account changed. (``sessionRecord(issuing:)`` checks the record is the same.)
            if change.metadata.isEmpty { return }
            for (name, record) in change.metadata { metadata[name] = record }
        case .replaceAll(let stored):
            map = stored.map
            clock.observe(stored.clock)
            for siblings in stored.map.entries.values { for sibling in siblings { clock.observe(sibling.timestamp) } }
            metadata = stored.metadata
        }
        followMetadata()
    }

    /// Puts in place a write of one key this object planned and the storage committed:
    /// what ``install(_:)`` does with the write's ``ReplicatedKeyValueStore/LocalWrite/storageChange``,
    /// with one lookup of the key and no dictionary built.
    mutating func install(_ write: ReplicatedKeyValueStore.LocalWrite) {
        let dot = write.siblings[0].dot
        map.replaceSiblings(forKey: write.key, with: write.siblings, settingCounter: dot.counter, of: dot.replica)
        clock.observe(write.siblings[0].timestamp)
        if write.metadata.isEmpty { return }
        for (name, record) in write.metadata { metadata[name] = record }
        followMetadata()
    }

    /// Follows what the metadata records once it changed: a new incarnation, an account
    /// switch, whether the sessions record still ends in this object's run.
    private mutating func followMetadata() {
        // A new incarnation recorded by this object or another writer of the storage.
        let writer = writerID.base.incarnation(ReplicatedKeyValueStore.incarnation(in: metadata))
        if writer != writerID {
            writerID = writer
            // A new incarnation is a new device to the hub: a clone of this store that kept
            // the old one syncs as another member, so the hub never answers one copy for
            // what the other acknowledged.
            hubMachine = DeviceSyncMachine(device: writer, account: hubMachine.account)
        }
        let recorded = metadata[ReplicatedKeyValueStore.currentAccountKey]
            .flatMap { AccountID(String(decoding: $0, as: UTF8.self)) } ?? account
        if recorded != account {
            account = recorded
            hubMachine.switchAccount(to: recorded)
            meshMachine.switchAccount(to: recorded)
            if let bytes = metadata[ReplicatedKeyValueStore.meshSessionsKey(recorded)] { meshMachine.restoreSessions(from: bytes) }
        }
        noteOwnRun()
    }

    /// Puts in place what other writers committed, and says what the app must be told.
    mutating func takeCatchUp(_ update: StorageUpdate) -> ReplicatedKeyValueStore.MergeOutcome {
        let previousAccount = account
        let keys: [String]
        switch update {
        case .change(let change): keys = change.entries.keys.sortedByUTF8()
        case .replaceAll(let stored): keys = Set(map.entries.keys).union(stored.map.entries.keys).sortedByUTF8()
        }
        let before = map
        // The storage went back under this object (its file was replaced by an older copy):
        // from here this object would issue again counters it issued before, under the
        // session that issued them first, and its sync machine would believe the hub holds
        // them. It goes on as a new session, as a new process would, and from nothing reported;
        // the session is derived from the current one, not drawn again (only the store's
        // session source, at open, draws).
        var wentBack = false
        if case .replaceAll(let stored) = update, stored.metadata[ReplicatedKeyValueStore.currentAccountKey] == metadata[ReplicatedKeyValueStore.currentAccountKey],
           stored.map.context[writerID] < map.context[writerID] {
            wentBack = true
            writeSession = WriteSessionSource.next(after: writeSession)
        }
        install(update)
        if wentBack { hubMachine = DeviceSyncMachine(device: writerID, account: account) }
        let reason: ChangeReason = account == previousAccount ? .serverChange : .accountChange
        return ReplicatedKeyValueStore.outcome(changedKeys: keys, before: { before.siblings(forKey: $0) }, after: map, policies: policies,
                                               reason: reason, reportingConflicts: reason != .accountChange)
    }
}

/// Changes planned on a scratch copy of the state (a merge, a sync message's actions):
/// each puts its result in the copy and records what the storage must commit.
extension ReplicatedKeyValueStore.State {
    /// Merges `delta`, recording the change after `change`.
    ///
    /// - Parameter treatingEmptyKeysAsDrops: Whether a key with no siblings is taken as
    ///   dropping what the context covers of it (the rest of a gossip whose only writes of a
    ///   key a device adopted: ``SyncAction/adopt(_:)``) instead of refused.
    /// - Throws: ``ConvergeError/malformed(_:)`` if the delta is not well formed; nothing
    ///   changes then.
    mutating func merge(_ delta: ReplicatedMap.Delta, partialKeys: Set<String> = [], treatingEmptyKeysAsDrops: Bool = false, reason: ChangeReason,
                        recording change: inout StorageChange?) throws(ConvergeError) -> ReplicatedKeyValueStore.MergeOutcome {
        guard let planned = try plannedMerge(delta, partialKeys: partialKeys, treatingEmptyKeysAsDrops: treatingEmptyKeysAsDrops, reason: reason) else {
            return ReplicatedKeyValueStore.MergeOutcome()
        }
        Self.record(planned.change, after: &change)
        map.replaceEntries(planned.change.entries, settingCounters: planned.change.contextCounters, wholeContext: planned.change.replacesContext)
        clock = planned.clock
        return planned.outcome
    }

    /// What ``merge(_:partialKeys:reason:recording:)`` would change, planned without changing
    /// this state (and so without copying its map): the storage change, the clock after it,
    /// and what to report; `nil` if it changes nothing.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if the delta is not well formed.
    func plannedMerge(_ delta: ReplicatedMap.Delta, partialKeys: Set<String> = [], treatingEmptyKeysAsDrops: Bool = false, reason: ChangeReason) throws(ConvergeError)
        -> (change: StorageChange, clock: HybridLogicalClock, outcome: ReplicatedKeyValueStore.MergeOutcome)? {
        // A delta built in this process (not decoded, which checks it) could hold siblings its
        // context does not cover; joined, they would break the state and travel on to every
        // replica. Refuse it instead. A key with no siblings is refused too, unless asked.
        try ReplicatedMap.validate(entries: treatingEmptyKeysAsDrops ? delta.entries.filter { !$0.value.isEmpty || $0.key.isEmpty } : delta.entries,
                                   context: delta.context)
        let planned = map.plannedApply(brokenJoin ? ReplicatedMap.Delta(entries: delta.entries.filter { map.entries[$0.key] == nil },
                                                                        context: delta.context) : delta, partialKeys: partialKeys)
        var nextClock = clock
        for siblings in delta.entries.values { for sibling in siblings { nextClock.observe(sibling.timestamp) } }
        if planned.changedKeys.isEmpty && planned.contextCounters.isEmpty && nextClock == clock { return nil }
        let outcome = ReplicatedKeyValueStore.outcome(changedKeys: planned.changedKeys, before: { map.siblings(forKey: $0) },
                                                      after: { planned.entries[$0] ?? [] }, policies: policies, reason: reason)
        return (StorageChange(entries: planned.entries, contextCounters: planned.contextCounters, clock: nextClock.latest), nextClock, outcome)
    }

    /// Joins a whole state, or the page of one that answers for `keys` (dropping what it
    /// has seen and no longer has), recording the change after `change`.
    mutating func join(_ other: ReplicatedMap, keys: KeySpan = .all, reason: ChangeReason,
                       recording change: inout StorageChange?) -> ReplicatedKeyValueStore.MergeOutcome {
        var next = map
        let changed = next.join(brokenJoin ? Self.leftBiased(other, over: map) : other, keys: keys)
        return commit(next, changedKeys: changed, observing: other.entries, reason: reason, recording: &change)
    }

    /// Drops tombstones below a stable frontier, recording the change after `change`.
    mutating func collectTombstones(below frontier: VersionVector, recording change: inout StorageChange?) {
        let keys = map.collectableKeys(stableFrontier: frontier)
        guard !keys.isEmpty else { return }
        var entries: [String: [Sibling]] = [:]
        for key in keys { entries[key] = [] }
        map.collectTombstones(stableFrontier: frontier)
        Self.record(StorageChange(entries: entries, clock: clock.latest), after: &change)
    }

    /// Drops every write of `writer` from counter `from` on and lowers the context for
    /// `writer` to below it (see ``SyncAction/withdraw(writer:from:)``).
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if the result breaks an invariant of the
    ///   map (it cannot: every write left is below the lowered counter).
    mutating func withdraw(writer: ReplicaID, from: UInt64, reason: ChangeReason,
                           recording change: inout StorageChange?) throws(ConvergeError) -> ReplicatedKeyValueStore.MergeOutcome {
        guard map.context[writer] >= from else { return ReplicatedKeyValueStore.MergeOutcome() }
        var entries = map.entries
        var changedKeys: [String] = []
        for (key, siblings) in map.entries where siblings.contains(where: { $0.dot.replica == writer && $0.dot.counter >= from }) {
            let kept = siblings.filter { !($0.dot.replica == writer && $0.dot.counter >= from) }
            entries[key] = kept.isEmpty ? nil : kept
            changedKeys.append(key)
        }
        var counters: [ReplicaID: UInt64] = [:]
        for entry in map.context.sortedEntries { counters[entry.replica] = entry.counter }
        counters[writer] = from - 1
        let next = try ReplicatedMap(entries: entries, context: VersionVector(counters))
        return commit(next, changedKeys: changedKeys.sortedByUTF8(), observing: [:], reason: reason, recording: &change)
    }

    /// Re-stamps `orphans` under this store's writer ID, from its next counter on, in
    /// counter order (then key order), keeping values and timestamps, and holds them beside
    /// the siblings of their keys (see ``SyncAction/adopt(_:)``), recording the change after
    /// `change`. The new counters are this object's session's.
    ///
    /// - Returns: What to report, and each write's key with its dot before and after.
    /// - Throws: ``ConvergeError/malformed(_:)`` if the counters would pass
    ///   ``Dot/maximumCounter``; nothing changes then.
    mutating func adopt(_ orphans: [String: [Sibling]], reason: ChangeReason, recording change: inout StorageChange?)
        throws(ConvergeError) -> (outcome: ReplicatedKeyValueStore.MergeOutcome, adopted: [AdoptedWrite]) {
        var writes = orphans.flatMap { key, siblings in siblings.map { (key: key, sibling: $0) } }
        // By dot, then key: a hostile peer can have put one dot under two keys, and the
        // order must not be the dictionary's.
        writes.sort { $0.sibling.dot != $1.sibling.dot ? $0.sibling.dot < $1.sibling.dot : $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        guard !writes.isEmpty else { return (ReplicatedKeyValueStore.MergeOutcome(), []) }
        let issued = map.context[writerID]
        guard issued <= Dot.maximumCounter - UInt64(writes.count) else {
            throw .malformed(.outOfRange, "adopting \(writes.count) writes would take \(writerID) past the largest counter")
        }
        var entries = map.entries
        var adopted: [AdoptedWrite] = []
        for (offset, write) in writes.enumerated() {
            let dot = Dot(replica: writerID, counter: issued + 1 + UInt64(offset))
            entries[write.key, default: []].append(write.sibling.restamped(dot))
            adopted.append(AdoptedWrite(key: write.key, old: write.sibling.dot, new: dot))
        }
        for key in Set(writes.map(\.key)) { entries[key]!.sort { $0.dot < $1.dot } }
        var context = map.context
        context.set(writerID, to: issued + UInt64(writes.count))
        let next = try ReplicatedMap(entries: entries, context: context)
        let sessions = sessionRecord(issuing: issued + 1)
        let outcome = commit(next, changedKeys: Set(writes.map(\.key)).sortedByUTF8(), observing: orphans, reason: reason, recording: &change)
        for (name, record) in sessions {
            change?.metadata[name] = record
            metadata[name] = record
        }
        return (outcome, adopted)
    }

    /// Puts a merged state in place and advances the clock past every timestamp received.
    private mutating func commit(_ next: ReplicatedMap, changedKeys: [String], observing received: [String: [Sibling]],
                                 reason: ChangeReason, recording change: inout StorageChange?) -> ReplicatedKeyValueStore.MergeOutcome {
        var nextClock = clock
        for siblings in received.values { for sibling in siblings { nextClock.observe(sibling.timestamp) } }
        let counters = map.context.changedCounters(toward: next.context)
        if changedKeys.isEmpty && counters.isEmpty && nextClock == clock { return ReplicatedKeyValueStore.MergeOutcome() }
        var entries: [String: [Sibling]] = [:]
        for key in changedKeys { entries[key] = next.siblings(forKey: key) }
        Self.record(StorageChange(entries: entries, contextCounters: counters, clock: nextClock.latest), after: &change)
        let previous = map
        map = next
        clock = nextClock
        return ReplicatedKeyValueStore.outcome(changedKeys: changedKeys, before: previous, after: next, policies: policies, reason: reason)
    }

    private static func record(_ later: StorageChange, after change: inout StorageChange?) {
        if change == nil { change = later } else { change!.append(later) }
    }
}
