/// Where a store keeps its durable local copy.
///
/// A store calls its storage before it changes anything in memory: if a write throws, the
/// write is refused and the store is unchanged. An implementation must make each write
/// atomic (all of it or none of it, across a crash) and durable once it returns.
/// Implementations: ``InMemoryStorage`` here; a simulated disk in `ConvergeSimulation`;
/// SQLite in `ConvergeSQLite`.
///
/// **Several writers.** Several store objects (in one process or in several) may share
/// one storage, as an app and its widget share a file. Each store writes through
/// ``write(since:_:)``: one exclusive transaction in which it first takes what the others
/// committed since it last looked (a ``StorageCatchUp``), then plans its own change on top
/// of it, so a counter is never issued twice and no writer rolls back another. Storages
/// that only ever have one writer (the simulated disk, a test double) get both members
/// from a default implementation over ``load()``, ``save(_:)`` and ``replaceAll(with:)``.
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

    /// What other writers committed since the storage's sequence number `seen` (everything
    /// stored if `seen` is `nil`), read as one consistent snapshot.
    ///
    /// - Throws: As ``load()``.
    func catchUp(since seen: UInt64?) throws(ConvergeError) -> StorageCatchUp

    /// Runs one exclusive write: `body` gets what others committed since `seen` and returns
    /// the update to record on top of it (or `nil` for none); the update is committed
    /// atomically and durably before this returns. No other writer of the same storage
    /// commits in between.
    ///
    /// - Returns: The storage's sequence number after the write: what the caller has now
    ///   seen.
    /// - Throws: What `body` throws, or the storage's error; nothing is recorded then (what
    ///   `body` was given was committed by others and stays true).
    func write(since seen: UInt64?, _ body: (StorageCatchUp) throws(ConvergeError) -> StorageUpdate?) throws(ConvergeError) -> UInt64
}

extension Storage {
    /// For a storage with one writer: everything stored when `seen` is `nil`, and nothing
    /// new afterwards. Its sequence number is always 0.
    public func catchUp(since seen: UInt64?) throws(ConvergeError) -> StorageCatchUp {
        guard seen == nil, let stored = try load() else { return StorageCatchUp(sequence: 0, update: nil) }
        return StorageCatchUp(sequence: 0, update: .replaceAll(stored))
    }

    /// For a storage with one writer: `body` gets ``catchUp(since:)`` and its update is
    /// saved with ``save(_:)`` or ``replaceAll(with:)``.
    public func write(since seen: UInt64?, _ body: (StorageCatchUp) throws(ConvergeError) -> StorageUpdate?) throws(ConvergeError) -> UInt64 {
        let caughtUp = try catchUp(since: seen)
        switch try body(caughtUp) {
        case nil: break
        case .change(let change)?: try save(change)
        case .replaceAll(let state)?: try replaceAll(with: state)
        }
        return caughtUp.sequence
    }
}

/// What one write records: a change of some keys, or a whole new state.
public enum StorageUpdate: Hashable, Sendable {
    /// Some keys, the context, the clock and some metadata records change.
    case change(StorageChange)
    /// Everything is replaced (an account switch, or a full reload of a storage that was
    /// rewritten).
    case replaceAll(StoredState)
}

/// What a storage's other writers committed since a reader last looked.
public struct StorageCatchUp: Hashable, Sendable {
    /// The storage's sequence number the reader has seen once it takes ``update``.
    public var sequence: UInt64
    /// What changed, or `nil` if nothing did.
    public var update: StorageUpdate?

    /// Creates a catch-up.
    public init(sequence: UInt64, update: StorageUpdate?) {
        self.sequence = sequence
        self.update = update
    }
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
///
/// A change names only what changed, the context's counters included, so that recording a
/// write costs the same whatever the number of replicas the context holds.
public struct StorageChange: Hashable, Sendable {
    /// The new sibling lists of the keys that changed; an empty list deletes the key.
    public var entries: [String: [Sibling]]
    /// The context's counters that changed, with their new values: 0 takes a replica out of
    /// the context, and a replica not named keeps its counter (see
    /// ``VersionVector/setCounters(_:)``).
    public var contextCounters: [ReplicaID: UInt64]
    /// Whether ``contextCounters`` is the whole context, so that a replica not named leaves
    /// it: what a storage hands a reader catching up, which cannot know what the reader holds.
    public var replacesContext: Bool
    /// The clock after the change.
    public var clock: HybridTimestamp
    /// Metadata records to set (`nil` deletes one).
    public var metadata: [String: [UInt8]?]

    /// Creates a change: the keys whose sibling lists changed, the context's counters that
    /// changed, the clock, and the metadata records to set or delete.
    public init(entries: [String: [Sibling]] = [:], contextCounters: [ReplicaID: UInt64] = [:], replacesContext: Bool = false,
                clock: HybridTimestamp, metadata: [String: [UInt8]?] = [:]) {
        self.entries = entries
        self.contextCounters = contextCounters
        self.replacesContext = replacesContext
        self.clock = clock
        self.metadata = metadata
    }

    /// Applies `later`, recorded after this change, so that one change does both.
    public mutating func append(_ later: StorageChange) {
        entries.merge(later.entries) { _, new in new }
        if later.replacesContext {
            contextCounters = later.contextCounters
            replacesContext = true
        } else {
            contextCounters.merge(later.contextCounters) { _, new in new }
        }
        clock = later.clock
        metadata.merge(later.metadata) { _, new in new }
    }

    /// Whether the change deletes a key or a metadata record.
    public var deletesAnything: Bool {
        entries.values.contains { $0.isEmpty } || metadata.values.contains { $0 == nil }
    }
}
