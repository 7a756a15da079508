/// The typed Swift API: `Codable` values, policies and registered defaults.
extension ReplicatedKeyValueStore {
    /// Encodes `instance` and writes it for `key`.
    ///
    /// - Throws: As ``setValue(_:forKey:)``, or ``ConvergeError/malformed(_:)`` if the
    ///   instance cannot be encoded as a property list.
    public func set<T: Encodable>(encoding instance: T, forKey key: String) throws(ConvergeError) {
        try setValue(try Value(encoding: instance), forKey: key)
    }

    /// Decodes the value of `key` as `T`, or returns `nil` if the key is absent.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if the value does not have `T`'s shape.
    public func decode<T: Decodable>(_ type: T.Type, forKey key: String) throws(ConvergeError) -> T? {
        guard let value = value(forKey: key) else { return nil }
        return try value.decode(T.self)
    }

    /// The policies reads resolve concurrent siblings with.
    public var policies: MergePolicies {
        get { state.withLock { $0.policies } }
        set { state.withLock { $0.policies = newValue } }
    }

    /// Assigns `policy` to exactly `key`.
    public func setPolicy(_ policy: MergePolicy, forKey key: String) {
        state.withLock { $0.policies.setPolicy(policy, forKey: key) }
    }

    /// Assigns `policy` to every key starting with `prefix`.
    public func setPolicy(_ policy: MergePolicy, forKeysWithPrefix prefix: String) {
        state.withLock { $0.policies.setPolicy(policy, forKeysWithPrefix: prefix) }
    }

    /// Registers values that reads fall back to when the synced domain has none. They
    /// are never stored and never synced, as `UserDefaults.register(defaults:)`.
    public func register(defaults: [String: Value]) {
        state.withLock { $0.registeredDefaults.merge(defaults) { _, new in new } }
    }

    /// Registers property-list defaults, without `try`, as `UserDefaults.register(defaults:)`.
    ///
    /// If any is not a property-list object, nothing is registered, and each such key is
    /// reported as a ``StoreEvent/writeRejected(key:error:)`` event (with a diagnostic on
    /// standard error in debug builds, where `UserDefaults` would raise).
    public func register(defaults: [String: Any]) {
        var converted: [String: Value] = [:]
        var refused: [(key: String, error: ConvergeError)] = []
        for key in defaults.keys.sortedByUTF8() {
            do { converted[key] = try Value(propertyList: defaults[key]!) } catch { refused.append((key, error)) }
        }
        guard refused.isEmpty else {
            for (key, error) in refused { reportRejected(key: key, error) }
            return
        }
        register(defaults: converted)
    }

    /// The registered defaults.
    public var registeredDefaults: [String: Value] {
        state.withLock { $0.registeredDefaults }
    }
}

extension ReplicatedKeyValueStore {
    /// Runs `body` with a fresh, empty, in-memory store that nothing else shares: a blank
    /// slate for a test, discarded afterwards.
    public static func withBlankStore<Result>(
        replicaID: ReplicaID = "blank", quota: Quota = .iCloud, policies: MergePolicies = MergePolicies(),
        clock: any PhysicalClock = ManualClock(),
        _ body: (ReplicatedKeyValueStore) throws -> Result
    ) rethrows -> Result {
        try body(ReplicatedKeyValueStore(replicaID: replicaID, quota: quota, policies: policies, clock: clock))
    }

    /// The `async` form of ``withBlankStore(replicaID:quota:policies:clock:_:)``.
    public static func withBlankStore<Result>(
        replicaID: ReplicaID = "blank", quota: Quota = .iCloud, policies: MergePolicies = MergePolicies(),
        clock: any PhysicalClock = ManualClock(),
        _ body: (ReplicatedKeyValueStore) async throws -> Result
    ) async rethrows -> Result {
        try await body(ReplicatedKeyValueStore(replicaID: replicaID, quota: quota, policies: policies, clock: clock))
    }
}
