import Converge
import ConvergeSQLite
import ConvergeSimulation
import Foundation
import Testing

/// A fresh, empty folder for one test.
func temporaryFolder(_ name: String = #function) -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("converge-tests-\(getpid())-\(name.filter { $0.isLetter || $0.isNumber })-\(UInt32.random(in: 0...UInt32.max))")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A kind of storage, able to make a fresh instance and to reopen it (as a new process
/// would after a clean shutdown).
struct StorageKind: CustomTestStringConvertible, Sendable {
    let name: String
    let make: @Sendable () throws -> any Storage
    let reopen: @Sendable (any Storage) throws -> any Storage
    var testDescription: String { name }

    static let all: [StorageKind] = [
        StorageKind(name: "in-memory", make: { InMemoryStorage() }, reopen: { $0 }),
        StorageKind(name: "simulated disk", make: { SimulatedDisk() }, reopen: { storage in
            (storage as! SimulatedDisk).flush()
            return storage
        }),
        StorageKind(name: "SQLite", make: { try SQLiteStorage(path: temporaryFolder("sqlite").appendingPathComponent("store.sqlite").path) },
                    reopen: { try SQLiteStorage(path: ($0 as! SQLiteStorage).path) }),
    ]
}

/// The store's behaviour on every storage: one test body each, run against in-memory,
/// simulated and SQLite storage.
@Suite("The store on every storage")
struct StorageConformanceTests {
    let clock = ManualClock()

    @Test(arguments: StorageKind.all)
    func writesRemovesAndMergesSurviveReopening(kind: StorageKind) throws {
        let storage = try kind.make()
        let store = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, clock: clock)
        try store.setValue("hello", forKey: "greeting")
        try store.setValue(.array([1, "two"]), forKey: "list")
        try store.setValue(.data(Data([0, 1, 2])), forKey: "bytes")
        try store.removeValue(forKey: "list")
        var other = ReplicatedMap()
        other.write("from tablet", forKey: "note", replica: "tablet", timestamp: HybridTimestamp(wallMilliseconds: 5, logical: 0))
        try store.merge(other.asDelta)
        let reopened = try ReplicatedKeyValueStore(replicaID: "phone", storage: try kind.reopen(storage), clock: clock)
        #expect(reopened.replicatedState == store.replicatedState)
        #expect(reopened.values == ["greeting": "hello", "bytes": .data(Data([0, 1, 2])), "note": "from tablet"])
        // The clock never goes back after a restart.
        try reopened.setValue("again", forKey: "greeting")
        #expect(reopened.siblings(forKey: "greeting")[0].timestamp > store.siblings(forKey: "greeting")[0].timestamp)
    }

    @Test(arguments: StorageKind.all)
    func aRefusedWriteChangesNothingStored(kind: StorageKind) throws {
        let storage = try kind.make()
        let quota = Quota(maximumKeyCount: 2, maximumTotalValueBytes: 100, maximumValueBytes: 50, maximumKeyBytes: 8)
        let store = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, quota: quota, clock: clock)
        try store.setValue("a", forKey: "one")
        #expect(throws: ConvergeError.self) { try store.setValue(.string(String(repeating: "x", count: 60)), forKey: "two") }
        #expect(throws: ConvergeError.self) { try store.setValues([(key: "two", value: "b"), (key: "three", value: "c")]) }
        #expect(throws: ConvergeError.emptyKey) { try store.setValue("x", forKey: "") }
        let reopened = try ReplicatedKeyValueStore(replicaID: "phone", storage: try kind.reopen(storage), quota: quota, clock: clock)
        #expect(reopened.values == ["one": "a"])
    }

    @Test(arguments: StorageKind.all)
    func aBatchIsWrittenWhole(kind: StorageKind) throws {
        let storage = try kind.make()
        let store = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, clock: clock)
        try store.setValues((0..<50).map { (key: "k\($0)", value: Value.integer(Int64($0))) })
        let reopened = try ReplicatedKeyValueStore(replicaID: "phone", storage: try kind.reopen(storage), clock: clock)
        #expect(reopened.values.count == 50)
        #expect(reopened.replicatedState.context["phone"] == 50)
    }

    @Test(arguments: StorageKind.all)
    func anAccountSwitchIsStored(kind: StorageKind) throws {
        let hub = InMemoryHub(clock: clock)
        let storage = try kind.make()
        let store = try ReplicatedKeyValueStore(replicaID: "phone", hub: hub, account: "alice", storage: storage, clock: clock)
        try store.setValue("alice's", forKey: "k")
        try store.switchAccount(to: "bob")
        try store.setValue("bob's", forKey: "k")
        let reopened = try ReplicatedKeyValueStore(replicaID: "phone", storage: try kind.reopen(storage), clock: clock)
        #expect(reopened.account == "bob")
        #expect(reopened.value(forKey: "k") == "bob's")
        try reopened.switchAccount(to: "alice")
        #expect(reopened.value(forKey: "k") == "alice's")
    }

    /// A change names only the context's counters it changes (so recording a write costs
    /// the same at 1 replica as at 1,540): the others stay, a lowered counter is lowered, a
    /// counter set to 0 takes its replica out, and a reader of the storage that catches up
    /// holds the same context as one that loads it afresh (SQLite hands it the whole
    /// context: a writer of an older version marked nothing when a replica left it).
    @Test(arguments: StorageKind.all)
    func aChangeSetsOnlyTheCountersItNames(kind: StorageKind) throws {
        let storage = try kind.make()
        _ = try storage.write(since: nil) { _ in .change(StorageChange(contextCounters: ["a": 3, "b": 2, "c": 1], clock: .zero)) }
        let reader = try storage.catchUp(since: nil)
        guard case .replaceAll(var seen)? = reader.update else {
            Issue.record("a first catch-up holds everything stored")
            return
        }
        _ = try storage.write(since: nil) { _ in .change(StorageChange(contextCounters: ["a": 5, "b": 1, "c": 0], clock: .zero)) }
        let expected = VersionVector(["a": 5, "b": 1])
        #expect(try kind.reopen(storage).load()?.map.context == expected)
        // A storage with several writers hands the reader what changed; one with a single
        // writer (the simulated disk) has no other reader to tell.
        switch try storage.catchUp(since: reader.sequence).update {
        case .change(let change)?: seen.apply(change)
        case .replaceAll(let state)?: seen = state
        case nil: seen = try #require(try storage.load())
        }
        #expect(seen.map.context == expected)
    }
}
