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
                      clock: clock, syncAgent: connection, account: account)
        // Storage that holds another account's domain is switched, never synced as this one;
        // storage that names no account is marked as this one's, so a later open can tell.
        if self.account != account {
            try switchAccount(to: account)
        } else {
            try recordAccount()
        }
    }

    /// Records the current account in storage, if it is not recorded yet.
    private func recordAccount() throws(ConvergeError) {
        try state.withLock { (state: inout State) throws(ConvergeError) in
            let recorded = Array(state.account.rawValue.utf8)
            guard state.metadata[Self.currentAccountKey] != recorded else { return }
            try storage.save(StorageChange(context: state.map.context, clock: state.clock.latest,
                                           metadata: [Self.currentAccountKey: recorded]))
            state.metadata[Self.currentAccountKey] = recorded
        }
    }

    /// The account this store's synced domain belongs to.
    public var account: AccountID {
        state.withLock { $0.account }
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
            let oldAccount = state.account
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
            // Keys that differ between accounts are not conflicts: only the change is reported.
            let outcome = Self.outcome(changedKeys: keys, before: previous, after: next, policies: state.policies, reason: .accountChange)
            return outcome.visibleChanges.isEmpty ? [] : [.externalChange(ExternalChange(reason: .accountChange, keys: outcome.visibleChanges))]
        }
        connection?.switchAccount(to: newAccount)
        emit(events)
    }

    static let currentAccountKey = "account"
    static func accountCacheKey(_ account: AccountID) -> String { "account-cache:" + account.rawValue }

    /// Applies a hub's reply: its changes (key by key, or as a whole state for a device
    /// that returns after retirement), quota compensations, and tombstone collection.
    ///
    /// Transports other than ``InMemoryHub`` (the simulator, a network) call this with each
    /// reply their ``DeviceSyncMachine`` accepted.
    ///
    /// - Throws: The storage's error; the store is then unchanged.
    public func apply(_ reply: SyncReply) throws(ConvergeError) {
        let events = try state.withLock { (state: inout State) throws(ConvergeError) -> [StoreEvent] in
            var events: [StoreEvent]
            switch reply.kind {
            case .delta:
                events = try mergeLocked(reply.delta, reason: .serverChange, into: &state).events
            case .fullState:
                let outcome = try joinLocked(ReplicatedMap(entries: reply.delta.entries, context: reply.delta.context),
                                             reason: .initialSyncChange, into: &state)
                events = outcome.events
                if outcome.visibleChanges.isEmpty {
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
