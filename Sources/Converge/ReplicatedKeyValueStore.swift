import Foundation
import Synchronization

/// A replicated key-value store: the API of `NSUbiquitousKeyValueStore`, iCloud's quotas,
/// and CRDT merging that never loses a write silently.
///
/// A store is one replica. Local writes are checked against the ``quota``, recorded in
/// ``storage`` and applied at once; other replicas' changes arrive when the store syncs
/// through its ``SyncTransport`` (``sync()``, or ``synchronize()``), or through
/// ``merge(_:reason:)``, and are reported as external changes and conflicts.
///
/// The store is a final class, like Apple's, and is `Sendable`: every method may be called
/// from any thread. State lives behind a mutex; notifications and observers run after it
/// is released, so an observer may call back into the store.
public final class ReplicatedKeyValueStore: Sendable {
    /// This replica's identifier.
    public let replicaID: ReplicaID
    /// The limits local writes are held to.
    public let quota: Quota
    /// Where the durable local copy lives.
    public let storage: any Storage
    /// The source of physical time for the hybrid logical clock.
    public let physicalClock: any PhysicalClock

    let state: Mutex<State>
    /// The storage's sequence number this object has seen (see ``Storage/write(since:_:)``).
    /// Held for the whole of a write, so this object's writes go one at a time, while
    /// readers only ever wait for ``state``.
    let storageSequence: Mutex<UInt64>
    let observers = Mutex(Observers())
    /// The transport to the hub, for stores created with one (see the sync layer).
    let transport: (any SyncTransport)?
    /// The background syncs ``synchronize()`` schedules for transports that cannot answer
    /// at once.
    let scheduledSyncs = Mutex(ScheduledSyncs())
    /// Whether ``storage`` is a ``VolatileStorage`` (an in-memory store's, made by
    /// ``init(replicaID:quota:policies:clock:)``): it keeps nothing, so a write neither
    /// catches up with it nor hands it a change (see ``performWrite(_:)``). Derived from the
    /// storage itself, so no other storage can be skipped.
    let storageKeepsNothing: Bool

    struct State: Sendable {
        var map: ReplicatedMap
        var clock: HybridLogicalClock
        var policies: MergePolicies
        var registeredDefaults: [String: Value] = [:]
        var metadata: [String: [UInt8]] {
            // Every change, in place or whole (a simple `didSet` keeps changes in place).
            didSet { metadataVersion &+= 1 }
        }
        /// How many times ``metadata`` changed: a write finds its ``ownRunRecorded`` still
        /// current by this number alone when nothing changed since, without looking the
        /// record up.
        private(set) var metadataVersion: UInt64 = 0
        var account: AccountID
        /// The device side of the hub protocol: what the hub reported, recorded with each
        /// reply (see ``ReplicatedKeyValueStore/hubProgressKey``), so a reopened store does
        /// not push everything again.
        var hubMachine: DeviceSyncMachine
        /// The device side of the mesh topology: what each peer reported.
        var meshMachine: MeshSyncMachine
        /// The ID this replica's writes are stamped with: its incarnation's (see
        /// ``ReplicaID/incarnation(_:)``), recorded in the metadata.
        var writerID: ReplicaID
        /// This object's write session (see ``WriterSessions``): from the store's
        /// ``WriteSessionSource`` when it opens.
        var writeSession: UInt64
        /// The sessions record last found to end in this object's own run (see
        /// ``sessionRecord(issuing:)``): kept by ``install(_:)``, so a write that finds it
        /// still in place records nothing without decoding it.
        var ownRunRecorded: OwnRunRecord?
        /// See ``ReplicatedKeyValueStore/maximumClockOffsetMilliseconds``.
        var maximumClockOffsetMilliseconds: UInt64 = 2 * 24 * 3_600 * 1_000
        /// See ``ReplicatedKeyValueStore/maximumHubRequestBytes``.
        var maximumHubRequestBytes = DeviceSyncMachine.defaultMaximumPushBytes
        /// Whether this store's polls and pushes accept a relative reply: until its hub refuses
        /// one and answers the same request in format 4 (see ``ReplicatedKeyValueStore/sync()``).
        var requestsAcceptRelativeReply = true
        /// Deliberately broken behaviours for the simulator's checkers (see ``_removesAreNoOps``).
        var brokenRemoves = false
        var brokenAccountSwitch = false
        var leakyAccountSwitch = false
        var forgetfulAccountSwitch = false
        var brokenSoftQuota = false
        var brokenJoin = false
        var blindToReusedCounters = false
        var resolvesRelativeRepliesBlindly = false
    }

    struct Observers: Sendable {
        var nextID = 0
        var handlers: [Int: @Sendable (StoreEvent) -> Void] = [:]
        /// Called after each local write commits (see ``observeLocalWrites(_:)``).
        var localWriteHandlers: [Int: @Sendable ([String]) -> Void] = [:]

        /// Handlers in registration order, so events reach them deterministically.
        var ordered: [@Sendable (StoreEvent) -> Void] {
            handlers.sorted { $0.key < $1.key }.map(\.value)
        }
    }

    /// Creates a store kept in memory and not synced.
    ///
    /// - Parameters:
    ///   - replicaID: This replica's identifier: a string literal (`"phone"`), or
    ///     `try ReplicaID(validating: text)` for text held in a `String`.
    ///   - quota: The limits of local writes; iCloud's by default.
    ///   - policies: How reads resolve concurrent siblings; last-writer-wins by default.
    ///   - clock: The physical time source; the system clock by default.
    public convenience init(
        replicaID: ReplicaID,
        quota: Quota = .iCloud,
        policies: MergePolicies = MergePolicies(),
        clock: any PhysicalClock = SystemClock()
    ) {
        // Nothing can reopen this store, so its storage keeps no second copy; it cannot fail.
        try! self.init(replicaID: replicaID, storage: VolatileStorage(), quota: quota, policies: policies, clock: clock, transport: nil)
    }

    /// Opens a store on `storage`, loading what it holds.
    ///
    /// - Throws: What the storage's ``Storage/load()`` throws; nothing is overwritten.
    public convenience init(
        replicaID: ReplicaID,
        storage: any Storage,
        quota: Quota = .iCloud,
        policies: MergePolicies = MergePolicies(),
        clock: any PhysicalClock = SystemClock()
    ) throws(ConvergeError) {
        try self.init(replicaID: replicaID, storage: storage, quota: quota, policies: policies, clock: clock, transport: nil)
    }

    /// Opens a store on `storage` with a source of write sessions, as the public
    /// initialiser does with the system's random generator: for tests and the simulator,
    /// whose runs must not depend on randomness the core draws.
    ///
    /// - Parameters:
    ///   - replicaID: This replica's identifier.
    ///   - storage: Where the store keeps its state.
    ///   - quota: The limits of local writes.
    ///   - policies: How reads resolve concurrent siblings.
    ///   - clock: The physical time source.
    ///   - writeSessions: Where this store object's write session comes from.
    /// - Throws: What the storage's ``Storage/load()`` throws; nothing is overwritten.
    package convenience init(
        replicaID: ReplicaID, storage: any Storage, quota: Quota = .iCloud, policies: MergePolicies = MergePolicies(),
        clock: any PhysicalClock = SystemClock(), writeSessions: WriteSessionSource
    ) throws(ConvergeError) {
        try self.init(replicaID: replicaID, storage: storage, quota: quota, policies: policies, clock: clock, transport: nil,
                      writeSessions: writeSessions)
    }

    /// - Parameters:
    ///   - account: The account of a storage that has never recorded one.
    ///   - writeSessions: Where this store object's write session comes from (see
    ///     ``WriteSessionSource``); the system's random generator by default.
    init(
        replicaID: ReplicaID, storage: any Storage, quota: Quota, policies: MergePolicies,
        clock: any PhysicalClock, transport: (any SyncTransport)?, account: AccountID = .default,
        writeSessions: WriteSessionSource = .system
    ) throws(ConvergeError) {
        let loaded = try storage.catchUp(since: nil)
        var stored = StoredState()
        switch loaded.update {
        case nil: break
        case .replaceAll(let state)?: stored = state
        case .change(let change)?: stored.apply(change)
        }
        self.replicaID = replicaID
        self.quota = quota
        self.storage = storage
        self.physicalClock = clock
        self.transport = transport
        self.storageKeepsNothing = storage is VolatileStorage
        let account = stored.metadata[Self.currentAccountKey].flatMap { AccountID(String(decoding: $0, as: UTF8.self)) } ?? account
        // The clock never goes back: not behind what was recorded, nor behind any write
        // the storage holds (a storage written by another tool may have recorded less).
        var clock = HybridLogicalClock(latest: stored.clock)
        for siblings in stored.map.entries.values { for sibling in siblings { clock.observe(sibling.timestamp) } }
        storageSequence = Mutex(loaded.sequence)
        state = Mutex(State(map: stored.map, clock: clock,
                            policies: policies, metadata: stored.metadata, account: account,
                            hubMachine: Self.hubMachine(device: replicaID.incarnation(Self.incarnation(in: stored.metadata)),
                                                        account: account, metadata: stored.metadata),
                            meshMachine: Self.meshMachine(device: replicaID, account: account, metadata: stored.metadata),
                            writerID: replicaID.incarnation(Self.incarnation(in: stored.metadata)),
                            writeSession: writeSessions.firstSession()))
    }

    // MARK: Local writes

    /// Writes `value` for `key`, or removes the key for `nil`, after checking the quota.
    ///
    /// - Throws: ``ConvergeError/emptyKey``, ``ConvergeError/invalidValue(_:)``,
    ///   ``ConvergeError/quotaExceeded(_:)`` or the storage's error; the store is then
    ///   unchanged.
    /// - Complexity: O(*v*) in the size of the values involved, plus the storage's cost.
    public func setValue(_ value: Value?, forKey key: String) throws(ConvergeError) {
        let key = Self.canonicalSpelling(of: key)
        defer { notifyLocalWrite(keys: [key]) }
        return try performWrite { (state: State) throws(ConvergeError) -> WritePlan<Void> in
            // One lookup of the key serves the quota check and the plan.
            let current = state.map.siblings(forKey: key)
            if !(state.brokenSoftQuota && !quota.admits(state.map.usage)) {
                try quota.check(writing: value, forKey: key, usage: state.map.usage, siblings: current)
            }
            if value == nil && state.brokenRemoves { return WritePlan(result: ()) }
            var clock = state.clock
            let timestamp = clock.tick(nowMilliseconds: physicalClock.nowMilliseconds())
            // The counter comes from the state just caught up inside the write transaction,
            // so no other writer of the storage can have issued it.
            guard let sibling = state.map.plannedWrite(value, forKey: key, replacing: current, replica: state.writerID, timestamp: timestamp) else {
                return WritePlan(result: ())
            }
            return WritePlan(localWrite: LocalWrite(key: key, sibling: sibling, metadata: state.sessionRecord(issuing: sibling.dot.counter)),
                             result: ())
        }
    }

    /// Writes several keys (`nil` removes) atomically: one durable storage transaction
    /// for the whole batch, which is how to write many keys fast on a durable storage.
    ///
    /// - Throws: What ``setValue(_:forKey:)`` throws for any key, checked in order against
    ///   the quota as the batch grows; the store is then unchanged (no key is written).
    public func setValues(_ changes: [(key: String, value: Value?)]) throws(ConvergeError) {
        defer { notifyLocalWrite(keys: changes.map { Self.canonicalSpelling(of: $0.key) }) }
        try performWrite { (state: State) throws(ConvergeError) -> WritePlan<Void> in
            // Planned on the batch's writes and usage, not on a copy of the map (which would
            // cost the size of the store): the map changes in place when the change is
            // installed. Each write sees the ones before it, as ``ReplicatedMap/write(_:forKey:replica:timestamp:)``
            // in turn would: its quota check, whether a removal is a no-op, its counter.
            var usage = state.map.usage
            var counter = state.map.context[state.writerID]
            var clock = state.clock
            var written: [String: [Sibling]] = [:]
            for (spelled, value) in changes {
                let key = Self.canonicalSpelling(of: spelled)
                let current = written[key] ?? state.map.siblings(forKey: key)
                try quota.check(writing: value, forKey: key, usage: usage, siblings: current)
                let timestamp = clock.tick(nowMilliseconds: physicalClock.nowMilliseconds())
                if value == nil && current.allSatisfy(\.isTombstone) { continue }
                counter += 1
                let sibling = Sibling(dot: Dot(replica: state.writerID, counter: counter), timestamp: timestamp, value: value)
                usage.remove(current)
                usage.add([sibling])
                written[key] = [sibling]
            }
            guard !written.isEmpty else { return WritePlan(result: ()) }
            return WritePlan(update: .change(StorageChange(entries: written, contextCounters: [state.writerID: counter], clock: clock.latest,
                                                           metadata: state.sessionRecord(issuing: state.map.context[state.writerID] + 1))),
                             result: ())
        }
    }

    /// The spelling a key is written with: Unicode normal form C. "é" composed and
    /// decomposed are one key to Swift (and so to reads), but different bytes to a storage,
    /// a hub's quota and other replicas' encodings; written keys are always composed.
    package static func canonicalSpelling(of key: String) -> String {
        // Over contiguous bytes (every native string's): a walk of the UTF-8 view costs more per byte.
        let isASCII = key.utf8.withContiguousStorageIfAvailable { $0.allSatisfy { $0 < 0x80 } } ?? key.utf8.allSatisfy { $0 < 0x80 }
        return isASCII ? key : key.precomposedStringWithCanonicalMapping
    }

    /// Removes `key`. Removing an absent key does nothing.
    ///
    /// - Throws: ``ConvergeError/emptyKey`` or the storage's error.
    public func removeValue(forKey key: String) throws(ConvergeError) {
        try setValue(nil, forKey: key)
    }

    /// Writes through the non-throwing compatible API: a refused write posts
    /// `quotaViolationChange` (quota) or reports ``StoreEvent/writeRejected(key:error:)``
    /// (anything else), and changes nothing.
    func setReportingErrors(_ value: Value?, forKey key: String) {
        do {
            try setValue(value, forKey: key)
        } catch {
            if case .quotaExceeded = error {
                emit([.externalChange(ExternalChange(reason: .quotaViolationChange, keys: [key]))])
            } else {
                reportRejected(key: key, error)
            }
        }
    }

    /// Reports a write the non-throwing API refused: a ``StoreEvent/writeRejected(key:error:)``
    /// event, and in debug builds a line on standard error, the diagnostic a developer sees
    /// where `UserDefaults` would raise an exception (release builds stay quiet and running).
    func reportRejected(key: String, _ error: ConvergeError) {
        #if DEBUG
        FileHandle.standardError.write(Data("Converge: a write of \"\(key)\" was refused and changed nothing: \(error)\n".utf8))
        #endif
        emit([.writeRejected(key: key, error: error)])
    }

    // MARK: Reads

    /// The visible value of `key` in the synced domain, falling through to the
    /// registered defaults.
    public func value(forKey key: String) -> Value? {
        state.withLock { state in
            // One sibling, the common case, needs no policy: it is what the key shows.
            guard let siblings = state.map.entries[key] else { return state.registeredDefaults[key] }
            let visible = siblings.count == 1 ? siblings[0].value
                : ReplicatedMap.visibleValue(of: siblings, policy: state.policies.policy(forKey: key))
            return visible ?? state.registeredDefaults[key]
        }
    }

    /// Every visible value of the synced domain (registered defaults are not included).
    public var values: [String: Value] {
        state.withLock { state in
            var result: [String: Value] = [:]
            for (key, siblings) in state.map.entries {
                if let value = ReplicatedMap.visibleValue(of: siblings, policy: state.policies.policy(forKey: key)) {
                    result[key] = value
                }
            }
            return result
        }
    }

    /// The siblings of `key` in canonical order: one unless concurrent writes are
    /// unresolved.
    public func siblings(forKey key: String) -> [Sibling] {
        state.withLock { $0.map.siblings(forKey: key) }
    }

    /// The keys that have concurrent siblings, in UTF-8 byte order.
    public var conflictedKeys: [String] {
        state.withLock { state in
            state.map.entries.filter { $0.value.count > 1 }.keys
                .sortedByUTF8()
        }
    }

    /// What the synced domain counts against the quota.
    public var usage: QuotaUsage {
        state.withLock { $0.map.usage }
    }

    /// A copy of the replicated state.
    public var replicatedState: ReplicatedMap {
        state.withLock { $0.map }
    }

    // MARK: Merging

    /// Merges changes from another replica (a delta or a whole state).
    ///
    /// Keys whose visible values change are reported as one ``ChangeReason/serverChange``
    /// (a `didChangeExternallyNotification`); keys left with concurrent siblings are
    /// reported as ``Conflict``s.
    ///
    /// - Returns: The keys whose visible values changed, in UTF-8 byte order.
    /// - Throws: ``ConvergeError/malformed(_:)`` if the delta is not well formed (a sibling
    ///   its context does not cover, siblings out of order, an empty key), or the
    ///   storage's error; the store is then unchanged.
    @discardableResult
    public func merge(_ delta: ReplicatedMap.Delta, reason: ChangeReason = .serverChange) throws(ConvergeError) -> [String] {
        try performWrite { (state: State) throws(ConvergeError) -> WritePlan<[String]> in
            try checkReceivable(delta, in: state)
            // Planned without a copy of the state: the map changes in place when the change
            // is installed, so a merge costs what it changes, not the size of the store.
            guard let planned = try state.plannedMerge(delta, reason: reason) else { return WritePlan(result: []) }
            return WritePlan(update: .change(planned.change), events: planned.outcome.events, result: planned.outcome.visibleChanges)
        }
    }

    /// How far ahead of this replica's physical clock a received write's timestamp may lie
    /// (two days by default): a message or delta holding one further ahead is refused with
    /// ``MalformedInput/Problem/clockAhead`` and changes nothing, as CockroachDB refuses a
    /// node whose clock is off by more than its maximum offset. The hybrid clock is then
    /// never dragged into the future by a peer whose clock is wrong, or hostile; the write
    /// is accepted once this clock catches up. A hub tolerates one day by default
    /// (``HubSyncMachine/maximumClockOffsetMilliseconds``), less than a device, so what a
    /// hub accepted is not refused by a device whose clock is a little behind the hub's.
    /// Tests that give stores clocks years apart (a ``ManualClock`` beside the system
    /// clock) must raise it, or give every store the same kind of clock.
    public var maximumClockOffsetMilliseconds: UInt64 {
        get { state.withLock { $0.maximumClockOffsetMilliseconds } }
        set { state.withLock { $0.maximumClockOffsetMilliseconds = newValue } }
    }

    /// The largest request this store sends a hub (just under
    /// ``SyncMessage/maximumEncodedBytes`` by default): changes larger than that travel in
    /// several requests, one per exchange, each a valid change on its own (see
    /// ``ReplicatedMap/delta(for:maximumBytes:)``). Lower it to fit a transport that takes
    /// less, such as a reverse proxy's body limit. A single key's entry larger than it
    /// still travels alone, in a larger request.
    public var maximumHubRequestBytes: Int {
        get { state.withLock { $0.maximumHubRequestBytes } }
        set { state.withLock { $0.maximumHubRequestBytes = max(64, min(newValue, DeviceSyncMachine.defaultMaximumPushBytes)) } }
    }

    /// Refuses a delta from a peer or hub that holds counters or timestamps out of range,
    /// or a write stamped further ahead of this replica's clock than
    /// ``maximumClockOffsetMilliseconds``.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)``.
    func checkReceivable(_ delta: ReplicatedMap.Delta, in state: State) throws(ConvergeError) {
        try delta.checkBounds()
        try delta.checkTimestamps(notAfter: physicalClock.nowMilliseconds().addingSaturating(state.maximumClockOffsetMilliseconds))
    }

    /// What a merge changed: the keys whose visible values changed, and the events to emit
    /// once the lock is released.
    struct MergeOutcome {
        var visibleChanges: [String] = []
        var events: [StoreEvent] = []
    }

    /// The external change and conflicts a merge produced.
    static func outcome(changedKeys: [String], before: ReplicatedMap, after: ReplicatedMap, policies: MergePolicies, reason: ChangeReason) -> MergeOutcome {
        outcome(changedKeys: changedKeys, before: { before.siblings(forKey: $0) }, after: after, policies: policies, reason: reason)
    }

    /// The external change and conflicts a change produced, given each key's siblings before.
    static func outcome(changedKeys: [String], before: (String) -> [Sibling], after: ReplicatedMap, policies: MergePolicies,
                        reason: ChangeReason, reportingConflicts: Bool = true) -> MergeOutcome {
        outcome(changedKeys: changedKeys, before: before, after: { after.siblings(forKey: $0) }, policies: policies,
                reason: reason, reportingConflicts: reportingConflicts)
    }

    /// The external change and conflicts a change produced, given each key's siblings before
    /// and after.
    static func outcome(changedKeys: [String], before: (String) -> [Sibling], after: (String) -> [Sibling], policies: MergePolicies,
                        reason: ChangeReason, reportingConflicts: Bool = true) -> MergeOutcome {
        var outcome = MergeOutcome()
        var conflicts: [StoreEvent] = []
        for key in changedKeys {
            let policy = policies.policy(forKey: key)
            let siblings = after(key)
            if ReplicatedMap.visibleValuesDiffer(before(key), siblings, policy: policy) { outcome.visibleChanges.append(key) }
            if reportingConflicts && siblings.count > 1 {
                let winner = ReplicatedMap.visibleValue(of: siblings, policy: policy)
                conflicts.append(.conflict(Conflict(key: key, siblings: siblings, winner: winner)))
            }
        }
        if !outcome.visibleChanges.isEmpty {
            outcome.events.append(.externalChange(ExternalChange(reason: reason, keys: outcome.visibleChanges)))
        }
        outcome.events += conflicts
        return outcome
    }

    // MARK: Events

    /// Calls `handler` with every event of this store until the token is cancelled or
    /// released.
    ///
    /// Handlers run on the thread that caused the event, after the store's lock is
    /// released, in registration order.
    public func observe(_ handler: @escaping @Sendable (StoreEvent) -> Void) -> ObservationToken {
        let id = observers.withLock { observers in
            let id = observers.nextID
            observers.nextID += 1
            observers.handlers[id] = handler
            return id
        }
        return ObservationToken { [weak self] in
            _ = self?.observers.withLock { $0.handlers.removeValue(forKey: id) }
        }
    }

    /// Delivers events: to observers, and external changes also as
    /// `didChangeExternallyNotification` on the default notification center.
    func emit(_ events: [StoreEvent]) {
        guard !events.isEmpty else { return }
        let handlers = observers.withLock { $0.ordered }
        for event in events {
            for handler in handlers { handler(event) }
            if case .externalChange(let change) = event {
                let conflicted = state.withLock { state in change.keys.filter { (state.map.entries[$0]?.count ?? 0) > 1 } }
                NotificationCenter.default.post(
                    name: Self.didChangeExternallyNotification, object: self,
                    userInfo: [Self.changeReasonKey: change.reason.rawValue, Self.changedKeysKey: change.keys,
                               Self.conflictedKeysKey: conflicted])
            }
        }
    }
}
