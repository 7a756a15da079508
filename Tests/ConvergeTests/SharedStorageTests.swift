import Converge
import Dispatch
import Foundation
import Synchronization
import Testing

/// A storage whose writes stop, after planning and before committing (where a disk would
/// sync), until the test lets them go: shows what other threads can do meanwhile.
final class GatedStorage: Storage {
    let inner = InMemoryStorage()
    /// Signalled when a write has planned its change and waits to commit.
    let entered = DispatchSemaphore(value: 0)
    /// Signalled by the test to let one waiting write commit.
    let release = DispatchSemaphore(value: 0)
    let isGated = Atomic(false)

    func load() throws(ConvergeError) -> StoredState? { try inner.load() }
    func save(_ change: StorageChange) throws(ConvergeError) { try inner.save(change) }
    func replaceAll(with state: StoredState) throws(ConvergeError) { try inner.replaceAll(with: state) }
    func catchUp(since seen: UInt64?) throws(ConvergeError) -> StorageCatchUp { try inner.catchUp(since: seen) }

    func write(since seen: UInt64?, _ body: (StorageCatchUp) throws(ConvergeError) -> StorageUpdate?) throws(ConvergeError) -> UInt64 {
        try inner.write(since: seen) { (catchUp: StorageCatchUp) throws(ConvergeError) -> StorageUpdate? in
            let update = try body(catchUp)
            if isGated.load(ordering: .sequentiallyConsistent) {
                entered.signal()
                release.wait()
            }
            return update
        }
    }
}

@Suite("Several store objects on one storage")
struct SharedStorageTests {
    let clock = ManualClock()

    @Test func twoStoresOnOneStorageNeverShareADotAndSeeEachOthersWrites() throws {
        let storage = InMemoryStorage()
        let first = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, clock: clock)
        let second = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, clock: clock)
        let recorder = NotificationRecorder(first)
        try first.setValue("a", forKey: "k1")
        try second.setValue("b", forKey: "k2")
        try second.setValue("c", forKey: "k1")
        #expect(second.siblings(forKey: "k1").map(\.dot) == [Dot(replica: "phone", counter: 3)])
        #expect(first.value(forKey: "k1") == "a")  // not looked yet
        #expect(try first.refresh() == ["k1", "k2"])
        #expect(first.value(forKey: "k1") == "c" && first.value(forKey: "k2") == "b")
        #expect(recorder.items == [NotificationRecorder.Item(reason: ChangeReason.serverChange.rawValue, keys: ["k1", "k2"])])
        // The first object's next write builds on the second's, never under it.
        try first.setValue("d", forKey: "k3")
        #expect(first.siblings(forKey: "k3").map(\.dot) == [Dot(replica: "phone", counter: 4)])
        #expect(first.replicatedState == second.replicatedState.joined(with: first.replicatedState))
        // Nothing to take: no notification, no change.
        #expect(try first.refresh() == [])
        #expect(recorder.items.count == 1)
    }

    @Test func anAccountSwitchByOneStoreIsFollowedByTheOthers() throws {
        let storage = InMemoryStorage()
        let first = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, clock: clock)
        let second = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, clock: clock)
        try first.setValue("mine", forKey: "k")
        _ = try second.refresh()
        let recorder = NotificationRecorder(second)
        try first.switchAccount(to: AccountID("other"))
        try second.refresh()
        #expect(second.account == AccountID("other"))
        #expect(second.value(forKey: "k") == nil)
        #expect(recorder.items == [NotificationRecorder.Item(reason: ChangeReason.accountChange.rawValue, keys: ["k"])])
    }

    /// A reader on another thread does not wait while a write is being made durable: the
    /// state lock is not held while the storage commits.
    @Test func aReaderDoesNotWaitForAnotherThreadsCommit() throws {
        let storage = GatedStorage()
        let store = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, clock: clock)
        try store.setValue("before", forKey: "k")
        storage.isGated.store(true, ordering: .sequentiallyConsistent)
        let writer = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? store.setValue("after", forKey: "k")
            writer.signal()
        }
        #expect(storage.entered.wait(timeout: .now() + 10) == .success)
        // The write is planned and waits to commit: a read answers at once, with what is durable.
        let read = DispatchSemaphore(value: 0)
        let seen = Mutex<Value?>(nil)
        DispatchQueue.global().async {
            seen.withLock { $0 = store.value(forKey: "k") }
            read.signal()
        }
        #expect(read.wait(timeout: .now() + 10) == .success, "a reader waited for another thread's commit")
        #expect(seen.withLock { $0 } == "before")
        storage.isGated.store(false, ordering: .sequentiallyConsistent)
        storage.release.signal()
        #expect(writer.wait(timeout: .now() + 10) == .success)
        #expect(store.value(forKey: "k") == "after")
    }
}

extension ReplicatedMap {
    fileprivate func joined(with other: ReplicatedMap) -> ReplicatedMap {
        var result = self
        result.join(other)
        return result
    }
}

@Suite("Several store objects on one storage, syncing")
struct SharedStorageSyncTests {
    /// A store object that syncs pushes what another object wrote to the same storage, and
    /// tells its app of it first.
    @Test func synchronizePushesAndReportsWhatAnotherObjectWrote() throws {
        let clock = ManualClock()
        let hub = InMemoryHub(clock: clock)
        let storage = InMemoryStorage()
        let app = try ReplicatedKeyValueStore(replicaID: "phone", hub: hub, storage: storage, clock: clock)
        let widget = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, clock: clock)
        let recorder = NotificationRecorder(app)
        try widget.setValue("from the widget", forKey: "note")
        #expect(app.synchronize())
        #expect(recorder.items == [NotificationRecorder.Item(reason: ChangeReason.serverChange.rawValue, keys: ["note"])])
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub, clock: clock)
        #expect(tablet.synchronize())
        #expect(tablet.value(forKey: "note") == "from the widget")
    }
}
