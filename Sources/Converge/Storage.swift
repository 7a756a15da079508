/// Where a store keeps its durable local copy.
///
/// A store calls its storage before it changes anything in memory: if ``save(_:)``
/// throws, the write is refused and the store is unchanged. An implementation must make
/// each ``save(_:)`` atomic (all of it or none of it, across a crash) and durable once it
/// returns. Implementations: ``InMemoryStorage`` here; a simulated disk in
/// `ConvergeSimulation`; SQLite in `ConvergeSQLite`.
public protocol Storage: AnyObject, Sendable {
    /// Reads everything stored, or `nil` if nothing ever was.
    ///
    /// - Throws: ``ConvergeError/storage(_:)`` or ``ConvergeError/malformed(_:)`` if what
    ///   is stored cannot be read; the storage must not repair or reset it silently.
    func load() throws(ConvergeError) -> StoredState?

    /// Records a change atomically and durably.
    func save(_ change: StorageChange) throws(ConvergeError)

    /// Replaces everything stored (an account switch or a full-state sync), atomically.
    func replaceAll(with state: StoredState) throws(ConvergeError)
}

/// Everything a store persists.
public struct StoredState: Hashable, Sendable {
    /// The replicated state.
    public var map: ReplicatedMap
    /// The last hybrid timestamp issued or observed, so the clock never goes back after a
    /// restart.
    public var clock: HybridTimestamp
    /// Opaque records of other layers (sync progress, the account), by name.
    public var metadata: [String: [UInt8]]

    /// Creates a stored state (empty by default).
    public init(map: ReplicatedMap = ReplicatedMap(), clock: HybridTimestamp = .zero, metadata: [String: [UInt8]] = [:]) {
        self.map = map
        self.clock = clock
        self.metadata = metadata
    }
}

/// One atomic change to a ``StoredState``.
public struct StorageChange: Hashable, Sendable {
    /// The new sibling lists of the keys that changed; an empty list deletes the key.
    public var entries: [String: [Sibling]]
    /// The whole new context.
    public var context: VersionVector
    /// The clock after the change.
    public var clock: HybridTimestamp
    /// Metadata records to set (`nil` deletes one).
    public var metadata: [String: [UInt8]?]

    /// Creates a change: the keys whose sibling lists changed, the whole new context, the
    /// clock, and the metadata records to set or delete.
    public init(entries: [String: [Sibling]] = [:], context: VersionVector, clock: HybridTimestamp, metadata: [String: [UInt8]?] = [:]) {
        self.entries = entries
        self.context = context
        self.clock = clock
        self.metadata = metadata
    }
}
