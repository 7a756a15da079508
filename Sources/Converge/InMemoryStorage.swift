import Synchronization

/// A ``Storage`` that keeps everything in memory: fast and isolated, for tests and for
/// stores that need no durable copy. Nothing survives the process.
public final class InMemoryStorage: Storage {
    private struct Contents {
        var state: StoredState?
        /// How many writes were committed: what a store object has seen of the others'.
        var sequence: UInt64 = 0

        func catchUp(since seen: UInt64?) -> StorageCatchUp {
            guard seen != sequence, let state else { return StorageCatchUp(sequence: sequence, update: nil) }
            // Memory is cheap to hand over whole; a store diffs it against what it holds.
            return StorageCatchUp(sequence: sequence, update: .replaceAll(state))
        }

        mutating func record(_ update: StorageUpdate) {
            switch update {
            case .change(let change):
                // In place: a copy of the state would cost its size at every write.
                if state == nil { state = StoredState() }
                state!.apply(change)
            case .replaceAll(let replacement):
                state = replacement
            }
            sequence += 1
        }
    }

    private let stored: Mutex<Contents>

    /// Creates an empty storage, or one holding `initial`.
    public init(_ initial: StoredState? = nil) {
        stored = Mutex(Contents(state: initial))
    }

    public func load() throws(ConvergeError) -> StoredState? {
        stored.withLock { $0.state }
    }

    public func save(_ change: StorageChange) throws(ConvergeError) {
        stored.withLock { $0.record(.change(change)) }
    }

    public func replaceAll(with state: StoredState) throws(ConvergeError) {
        stored.withLock { $0.record(.replaceAll(state)) }
    }

    public func catchUp(since seen: UInt64?) throws(ConvergeError) -> StorageCatchUp {
        stored.withLock { $0.catchUp(since: seen) }
    }

    public func write(since seen: UInt64?, _ body: (StorageCatchUp) throws(ConvergeError) -> StorageUpdate?) throws(ConvergeError) -> UInt64 {
        try stored.withLock { (contents: inout Contents) throws(ConvergeError) -> UInt64 in
            let caughtUp = contents.catchUp(since: seen)
            guard let update = try body(caughtUp) else { return caughtUp.sequence }
            contents.record(update)
            return contents.sequence
        }
    }
}

extension StoredState {
    /// Applies a change from a store, key by key (what a ``Storage`` does on ``Storage/save(_:)``);
    /// the store maintains the invariants.
    public mutating func apply(_ change: StorageChange) {
        map.replaceEntries(change.entries, settingCounters: change.contextCounters, wholeContext: change.replacesContext)
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
