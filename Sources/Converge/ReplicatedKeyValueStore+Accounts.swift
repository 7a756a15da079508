/// Accounts: a store's synced domain belongs to one account, and switching replaces it
/// with another account's data. No value of one account ever reaches another's replicas.
extension ReplicatedKeyValueStore {
    /// The account this store's synced domain belongs to.
    public var account: AccountID {
        state.withLock { $0.account }
    }

    /// Switches the synced domain to another account's data.
    ///
    /// The current account's data is kept aside locally (so switching back restores it
    /// without a full download) and the new account's is put in place: what this device
    /// last had of it, or nothing until the next sync. The sync state machines forget what
    /// the old account's hub and peers reported, and an answer of the old account that
    /// arrives later is ignored. Observers get an ``ChangeReason/accountChange`` with the
    /// keys whose visible values changed. No value of one account is ever sent to
    /// another's hub state.
    ///
    /// - Throws: The storage's error; the store is then unchanged.
    /// - Complexity: O(*n*) in the siblings of both accounts' states.
    public func switchAccount(to newAccount: AccountID) throws(ConvergeError) {
        try performWrite { (state: State) throws(ConvergeError) -> WritePlan<Void> in
            let oldAccount = state.account
            guard oldAccount != newAccount else { return WritePlan(result: ()) }
            var metadata = state.metadata
            metadata[Self.accountCacheKey(oldAccount)] = state.forgetfulAccountSwitch ? nil : state.map.encoded()
            var next = try metadata.removeValue(forKey: Self.accountCacheKey(newAccount)).map { bytes throws(ConvergeError) in
                try ReplicatedMap(encoded: bytes)
            } ?? ReplicatedMap()
            if state.leakyAccountSwitch { _ = next.join(state.map) }
            if state.brokenAccountSwitch {
                next = try ReplicatedMap(entries: next.entries.filter { !$0.value.allSatisfy { $0.dot.replica == replicaID } },
                                         context: next.context)
            }
            // Installing the update switches the account and the sync machines, for this
            // object and for every other writer of the storage that catches up with it.
            metadata[Self.currentAccountKey] = Array(newAccount.rawValue.utf8)
            // The cached state was this store's, so its clock has seen every timestamp in it;
            // observing them again keeps that true even for a cache written elsewhere.
            var clock = state.clock
            for siblings in next.entries.values { for sibling in siblings { clock.observe(sibling.timestamp) } }
            let keys = Set(state.map.entries.keys).union(next.entries.keys).sortedByUTF8()
            // Keys that differ between accounts are not conflicts: only the change is reported.
            let outcome = Self.outcome(changedKeys: keys, before: state.map, after: next, policies: state.policies, reason: .accountChange)
            let events: [StoreEvent] = outcome.visibleChanges.isEmpty
                ? [] : [.externalChange(ExternalChange(reason: .accountChange, keys: outcome.visibleChanges))]
            return WritePlan(update: .replaceAll(StoredState(map: next, clock: clock.latest, metadata: metadata)), events: events, result: ())
        }
    }

    /// Puts the store on `account`: switches if its storage holds another account's
    /// domain (never syncing it as this one), or records `account` in storage that names
    /// none, so a later open can tell.
    func adopt(_ account: AccountID) throws(ConvergeError) {
        if self.account != account { return try switchAccount(to: account) }
        try performWrite { (state: State) throws(ConvergeError) -> WritePlan<Void> in
            let recorded = Array(state.account.rawValue.utf8)
            guard state.metadata[Self.currentAccountKey] != recorded else { return WritePlan(result: ()) }
            return WritePlan(update: .change(StorageChange(clock: state.clock.latest,
                                                           metadata: [Self.currentAccountKey: recorded])),
                             result: ())
        }
    }

    /// What this store keeps aside of `account`, another account than its own: its state
    /// when it last switched away from it, or `nil` if it keeps none. For the simulator's
    /// checks (a hub's copy of an account no device is on, after the hub lost writes).
    package func keptAsideState(of account: AccountID) -> ReplicatedMap? {
        state.withLock { $0.metadata[Self.accountCacheKey(account)] }.flatMap { try? ReplicatedMap(encoded: $0) }
    }

    static let currentAccountKey = "account"
    /// The start of the name of every metadata record of a state kept aside.
    static let accountCachePrefix = "account-cache:"
    static func accountCacheKey(_ account: AccountID) -> String { accountCachePrefix + account.rawValue }
}
