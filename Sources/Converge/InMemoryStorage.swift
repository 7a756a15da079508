import Synchronization

/// A ``Storage`` that keeps everything in memory: fast and isolated, for tests and for
/// stores that need no durable copy. Nothing survives the process.
public final class InMemoryStorage: Storage {
    private let stored: Mutex<StoredState?>

    /// Creates an empty storage, or one holding `initial`.
    public init(_ initial: StoredState? = nil) {
        stored = Mutex(initial)
    }

    public func load() throws(ConvergeError) -> StoredState? {
        stored.withLock { $0 }
    }

    public func save(_ change: StorageChange) throws(ConvergeError) {
        try stored.withLock { (state: inout StoredState?) throws(ConvergeError) in
            var next = state ?? StoredState()
            next.apply(change)
            state = next
        }
    }

    public func replaceAll(with state: StoredState) throws(ConvergeError) {
        stored.withLock { $0 = state }
    }
}

extension StoredState {
    /// Applies a change from a store, key by key (what a ``Storage`` does on ``Storage/save(_:)``);
    /// the store maintains the invariants.
    public mutating func apply(_ change: StorageChange) {
        map.replaceEntries(change.entries, context: change.context)
        clock = change.clock
        for (name, record) in change.metadata { metadata[name] = record }
    }
}
