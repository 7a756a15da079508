import Foundation

extension ReplicatedKeyValueStore {
    /// Creates a store kept in memory and attached to an in-process hub: its
    /// ``synchronize()`` pushes local changes to the hub and pulls the others'.
    ///
    /// - Parameters:
    ///   - replicaID: This device's replica ID, unique among the hub's devices.
    ///   - hub: The hub to sync with.
    ///   - account: The account whose data the store holds.
    ///   - quota: The limits of local writes; the hub's by default.
    public convenience init(
        replicaID: ReplicaID, hub: InMemoryHub, account: AccountID = .default, quota: Quota? = nil,
        policies: MergePolicies = MergePolicies(), clock: any PhysicalClock = SystemClock()
    ) {
        // An empty in-memory storage cannot fail to load.
        try! self.init(replicaID: replicaID, hub: hub, account: account, storage: InMemoryStorage(),
                       quota: quota, policies: policies, clock: clock)
    }

    /// Opens a store on `storage`, attached to an in-process hub.
    ///
    /// - Throws: What the storage's ``Storage/load()`` throws.
    public convenience init(
        replicaID: ReplicaID, hub: InMemoryHub, account: AccountID = .default, storage: any Storage,
        quota: Quota? = nil, policies: MergePolicies = MergePolicies(), clock: any PhysicalClock = SystemClock()
    ) throws(ConvergeError) {
        let connection = HubConnection(hub: hub, device: replicaID, account: account)
        try self.init(replicaID: replicaID, storage: storage, quota: quota ?? hub.quota, policies: policies,
                      clock: clock, syncAgent: connection)
    }

    /// The account this store's synced domain belongs to.
    public var account: AccountID {
        (syncAgent as? HubConnection)?.account ?? state.withLock { $0.account }
    }

    /// Switches the synced domain to another account's data.
    ///
    /// The current account's data is kept aside locally (so switching back restores it
    /// without a full download) and the new account's is put in place: what this device
    /// last had of it, or nothing until the next ``synchronize()``. Observers get an
    /// ``ChangeReason/accountChange`` with the keys whose visible values changed. No value
    /// of one account is ever sent to another's hub state.
    ///
    /// - Throws: The storage's error; the store is then unchanged.
    public func switchAccount(to newAccount: AccountID) throws(ConvergeError) {
        let connection = syncAgent as? HubConnection
        let events = try state.withLock { (state: inout State) throws(ConvergeError) -> [StoreEvent] in
            let oldAccount = connection?.account ?? state.account
            guard oldAccount != newAccount else { return [] }
            var metadata = state.metadata
            metadata[Self.accountCacheKey(oldAccount)] = state.map.encoded()
            let next = try metadata.removeValue(forKey: Self.accountCacheKey(newAccount)).map { bytes throws(ConvergeError) in
                try ReplicatedMap(encoded: bytes)
            } ?? ReplicatedMap()
            metadata[Self.currentAccountKey] = Array(newAccount.rawValue.utf8)
            try storage.replaceAll(with: StoredState(map: next, clock: state.clock.latest, metadata: metadata))
            let previous = state.map
            state.map = next
            state.metadata = metadata
            state.account = newAccount
            let keys = Set(previous.entries.keys).union(next.entries.keys)
                .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            return Self.events(changedKeys: keys, before: previous, after: next, policies: state.policies, reason: .accountChange)
                .filter { if case .externalChange = $0 { return true } else { return false } }
        }
        connection?.switchAccount(to: newAccount)
        emit(events)
    }

    static let currentAccountKey = "account"
    static func accountCacheKey(_ account: AccountID) -> String { "account-cache:" + account.rawValue }

    /// Applies a hub's reply: its changes (key by key, or as a whole state for a device
    /// that returns after retirement), quota compensations, and tombstone collection.
    func apply(_ reply: SyncReply) throws(ConvergeError) {
        let events = try state.withLock { (state: inout State) throws(ConvergeError) -> [StoreEvent] in
            var events: [StoreEvent]
            switch reply.kind {
            case .delta:
                events = try mergeLocked(reply.delta, reason: .serverChange, into: &state)
            case .fullState:
                events = try joinLocked(ReplicatedMap(entries: reply.delta.entries, context: reply.delta.context),
                                        reason: .initialSyncChange, into: &state)
                if !events.contains(where: { if case .externalChange = $0 { return true } else { return false } }) {
                    // The app is told of the initial sync even when no visible value changed.
                    events.insert(.externalChange(ExternalChange(reason: .initialSyncChange, keys: [])), at: 0)
                }
            }
            try collectTombstonesLocked(below: reply.stableFrontier, in: &state)
            if !reply.rejectedKeys.isEmpty {
                events.append(.externalChange(ExternalChange(reason: .quotaViolationChange, keys: reply.rejectedKeys)))
            }
            return events
        }
        emit(events)
    }

    /// Joins a whole state (dropping what it has seen and no longer has), with the lock held.
    func joinLocked(_ other: ReplicatedMap, reason: ChangeReason, into state: inout State) throws(ConvergeError) -> [StoreEvent] {
        var next = state.map
        let changed = next.join(other)
        var clock = state.clock
        for siblings in other.entries.values { for sibling in siblings { clock.observe(sibling.timestamp) } }
        var entries: [String: [Sibling]] = [:]
        for key in changed { entries[key] = next.siblings(forKey: key) }
        try storage.save(StorageChange(entries: entries, context: next.context, clock: clock.latest))
        let previous = state.map
        state.map = next
        state.clock = clock
        return Self.events(changedKeys: changed, before: previous, after: next, policies: state.policies, reason: reason)
    }

    /// Drops tombstones below a stable frontier, durably, with the lock held.
    func collectTombstonesLocked(below frontier: VersionVector, in state: inout State) throws(ConvergeError) {
        let keys = state.map.collectableKeys(stableFrontier: frontier)
        guard !keys.isEmpty else { return }
        var entries: [String: [Sibling]] = [:]
        for key in keys { entries[key] = [] }
        try storage.save(StorageChange(entries: entries, context: state.map.context, clock: state.clock.latest))
        state.map.collectTombstones(stableFrontier: frontier)
    }
}
