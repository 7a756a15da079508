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

/// The storage of a store that lives only in memory and is never reopened (the store
/// created by ``ReplicatedKeyValueStore/init(replicaID:quota:policies:clock:)``): it keeps
/// nothing, because the store's own state is the only copy anyone can read. Use
/// ``InMemoryStorage`` to reopen a store from memory.
final class VolatileStorage: Storage {
    func load() throws(ConvergeError) -> StoredState? { nil }
    func save(_ change: StorageChange) throws(ConvergeError) {}
    func replaceAll(with state: StoredState) throws(ConvergeError) {}
}
