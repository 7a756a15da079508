import Converge
import Synchronization

/// A ``Storage`` that models a disk with a write-back cache: saves are kept pending until
/// ``flush()`` makes them durable, and ``crash()`` loses what is still pending, as a power
/// cut would. One run uses it from one thread; the lock only satisfies `Sendable`.
package final class SimulatedDisk: Storage {
    private struct Contents {
        var durable: StoredState?
        var pending: [Pending] = []
        var full = false
        /// A broken disk that, when full, loses the keys of what it saves and reports success.
        var dropsSavesWhenFull = false
    }

    private enum Pending {
        case save(StorageChange)
        case replace(StoredState)
    }

    private let contents = Mutex(Contents())

    /// An empty disk.
    package init() {}

    /// What the store would read back now: the durable state with the pending saves on top.
    package func load() throws(ConvergeError) -> StoredState? {
        contents.withLock { Self.current($0) }
    }

    /// The durable state with the pending saves on top.
    private static func current(_ contents: Contents) -> StoredState? {
        var state = contents.durable
        for change in contents.pending { apply(change, to: &state) }
        return state
    }

    /// Keeps `change` pending until the next ``flush()``.
    ///
    /// - Throws: A disk-full storage error while the disk ``isFull``; nothing is kept (a disk
    ///   that ``dropsSavesWhenFull`` throws nothing and keeps all but the keys).
    package func save(_ change: StorageChange) throws(ConvergeError) {
        try contents.withLock { (contents: inout Contents) throws(ConvergeError) in
            guard !contents.full else {
                guard contents.dropsSavesWhenFull else { throw Self.fullError }
                // The keys are lost; the counters that rise, the clock and the metadata are
                // kept, so that what is on the disk still reads as a state: every sibling it
                // holds stays covered (a change names only the counters it sets, and one that
                // withdraws a writer's counters lowers them as it removes the siblings).
                let context = Self.current(contents)?.map.context ?? VersionVector()
                let raised = change.contextCounters.filter { $0.value > context[$0.key] }
                contents.pending.append(.save(StorageChange(contextCounters: raised, clock: change.clock, metadata: change.metadata)))
                return
            }
            contents.pending.append(.save(change))
        }
    }

    /// Keeps the replacement pending until the next ``flush()``.
    ///
    /// - Throws: A disk-full storage error while the disk ``isFull``; nothing is kept (a disk
    ///   that ``dropsSavesWhenFull`` throws nothing and keeps all but the keys).
    package func replaceAll(with state: StoredState) throws(ConvergeError) {
        try contents.withLock { (contents: inout Contents) throws(ConvergeError) in
            guard !contents.full else {
                guard contents.dropsSavesWhenFull else { throw Self.fullError }
                // Every key is lost; the context, clock and metadata are kept, as for a save.
                var emptied = state
                emptied.map = try! ReplicatedMap(entries: [:], context: state.map.context)  // no siblings: nothing to cover
                contents.pending.append(.replace(emptied))
                return
            }
            contents.pending.append(.replace(state))
        }
    }

    /// Whether every save fails, as on a full disk (what was saved before stays).
    package var isFull: Bool {
        get { contents.withLock { $0.full } }
        set { contents.withLock { $0.full = newValue } }
    }

    /// Whether, when full, the disk loses the keys of what it saves and reports success (a
    /// broken variant).
    package var dropsSavesWhenFull: Bool {
        get { contents.withLock { $0.dropsSavesWhenFull } }
        set { contents.withLock { $0.dropsSavesWhenFull = newValue } }
    }

    private static var fullError: ConvergeError {
        .storage(.diskFull, path: "simulated-disk", operation: .write, detail: "no space left on the simulated device")
    }

    /// Whether anything is waiting to be made durable.
    package var hasPendingWrites: Bool { contents.withLock { !$0.pending.isEmpty } }

    /// Makes every pending save durable (an fsync).
    package func flush() {
        contents.withLock { contents in
            for change in contents.pending { Self.apply(change, to: &contents.durable) }
            contents.pending.removeAll()
        }
    }

    /// Loses every pending save.
    package func crash() {
        contents.withLock { $0.pending.removeAll() }
    }

    /// A copy of what the disk has made durable (a backup of the device's disk): what
    /// ``restore(_:)`` puts back. Pending saves are not in it, as a backup of a running
    /// device holds only what reached the disk.
    package func snapshot() -> StoredState? {
        contents.withLock { $0.durable }
    }

    /// Replaces the disk's contents with `snapshot` (an earlier ``snapshot()``, or `nil` for
    /// an empty disk): what it held durably and every pending save are gone, as when a
    /// device's disk is restored from a backup. Whether it is full does not change.
    package func restore(_ snapshot: StoredState?) {
        contents.withLock { contents in
            contents.durable = snapshot
            contents.pending.removeAll()
        }
    }

    private static func apply(_ pending: Pending, to state: inout StoredState?) {
        switch pending {
        case .save(let change):
            // In place: a copy of the state would cost its size at every save.
            if state == nil { state = StoredState() }
            state!.apply(change)
        case .replace(let replacement):
            state = replacement
        }
    }
}
