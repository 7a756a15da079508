import Converge
import Foundation
import Synchronization
import Testing

/// A storage that refuses every write, to show that a failed save changes nothing.
final class RefusingStorage: Storage {
    func load() throws(ConvergeError) -> StoredState? { nil }
    func save(_ change: StorageChange) throws(ConvergeError) { throw .storage(Self.failure) }
    func replaceAll(with state: StoredState) throws(ConvergeError) { throw .storage(Self.failure) }
    static let failure = StorageFailure(kind: .diskFull, path: "simulated.db", operation: .write)
}

/// Collects store events from any thread.
final class EventLog: Sendable {
    private let events = Mutex<[StoreEvent]>([])
    func append(_ event: StoreEvent) { events.withLock { $0.append(event) } }
    var all: [StoreEvent] { events.withLock { $0 } }
    var conflicts: [Conflict] { all.compactMap { if case .conflict(let c) = $0 { return c } else { return nil } } }
    var changes: [ExternalChange] { all.compactMap { if case .externalChange(let c) = $0 { return c } else { return nil } } }
}

@Suite("The store: writes, reads, merges, events and defaults")
struct StoreTests {
    let clock = ManualClock()

    func makeStore(_ id: ReplicaID = "phone", policies: MergePolicies = MergePolicies()) -> ReplicatedKeyValueStore {
        ReplicatedKeyValueStore(replicaID: id, policies: policies, clock: clock)
    }

    @Test func everyCompatibleSetterStoresItsType() {
        let store = makeStore()
        store.set("s" as String?, forKey: "string")
        store.set(Data([1, 2]) as Data?, forKey: "data")
        store.set(["a"] as [Any]?, forKey: "array")
        store.set(["k": 1] as [String: Any]?, forKey: "dictionary")
        store.set(true, forKey: "bool")
        store.set(2.5, forKey: "double")
        store.set(Int64(7), forKey: "integer")
        store.set(Date(timeIntervalSince1970: 5) as Any?, forKey: "date")
        #expect(store.values == [
            "string": "s", "data": .data(Data([1, 2])), "array": ["a"], "dictionary": ["k": 1], "bool": true,
            "double": 2.5, "integer": 7, "date": .date(Date(timeIntervalSince1970: 5)),
        ])
        #expect(store.dictionaryRepresentation.count == 8)
        store.set(nil as String?, forKey: "string")
        store.removeObject(forKey: "data")
        store.set(nil as Any?, forKey: "array")
        #expect(store.object(forKey: "string") == nil && store.object(forKey: "data") == nil && store.object(forKey: "array") == nil)
        #expect(store.synchronize())
    }

    @Test func removingAnAbsentKeyCreatesNoWrite() throws {
        let store = makeStore()
        store.removeObject(forKey: "never-written")
        try store.removeValue(forKey: "never-written")
        #expect(store.replicatedState.context.isEmpty)
    }

    @Test func invalidInputsAreRefusedWithAClearErrorAndChangeNothing() throws {
        let store = makeStore()
        try store.setValue("kept", forKey: "k")
        let before = store.replicatedState
        #expect(throws: ConvergeError.emptyKey) { try store.setValue(1, forKey: "") }
        #expect(throws: ConvergeError.invalidValue(.notANumber)) { try store.setValue(.double(.nan), forKey: "k") }
        let log = EventLog()
        let token = store.observe(log.append)
        store.set(Double.nan, forKey: "k")
        store.set(NSObject() as Any?, forKey: "k")
        store.set(UInt64.max as Any?, forKey: "k")
        store.set("no key", forKey: "")
        token.cancel()
        #expect(store.replicatedState == before)
        #expect(log.all.count == 4)
        #expect(log.all.prefix(3).allSatisfy { if case .writeRejected(key: "k", _) = $0 { return true } else { return false } })
        #expect(log.all.last == .writeRejected(key: "", error: .emptyKey))
        #expect(ConvergeError.invalidValue(.notANumber).description.contains("NaN"))
    }

    @Test func aStorageFailureRefusesTheWriteAndChangesNothing() throws {
        let store = try ReplicatedKeyValueStore(replicaID: "phone", storage: RefusingStorage(), clock: clock)
        #expect(throws: ConvergeError.storage(RefusingStorage.failure)) { try store.setValue(1, forKey: "k") }
        #expect("\(ConvergeError.storage(RefusingStorage.failure))" == "storage error: cannot write simulated.db: the disk is full")
        #expect(store.value(forKey: "k") == nil)
        #expect(store.replicatedState == ReplicatedMap())
        var remote = ReplicatedMap()
        remote.write(1, forKey: "k", replica: "tablet", timestamp: .zero)
        #expect(throws: ConvergeError.self) { try store.merge(remote.asDelta) }
        #expect(store.replicatedState == ReplicatedMap())
    }

    @Test func aDeltaWhoseContextDoesNotCoverItsSiblingsIsRefused() throws {
        let store = makeStore()
        try store.setValue("kept", forKey: "k")
        let before = store.replicatedState
        let sibling = Sibling(dot: Dot(replica: "tablet", counter: 3), timestamp: .zero, value: "forged")
        let forged = ReplicatedMap.Delta(entries: ["k": [sibling]], context: VersionVector(["tablet": 1]))
        #expect(throws: ConvergeError.malformed(MalformedInput(problem: .notCovered,
                                                               detail: "sibling tablet:3 of \"k\" is not covered by the context [tablet:1]"))) {
            try store.merge(forged)
        }
        let unordered = ReplicatedMap.Delta(entries: ["k": [sibling, Sibling(dot: Dot(replica: "tablet", counter: 1), timestamp: .zero, value: "x")]],
                                            context: VersionVector(["tablet": 3]))
        #expect(throws: ConvergeError.self) { try store.merge(unordered) }
        #expect(store.replicatedState == before)
    }

    @Test func aReopenedStoreKeepsItsDataAndItsClockNeverGoesBack() throws {
        let storage = InMemoryStorage()
        let first = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, clock: clock)
        try first.setValue("v1", forKey: "k")
        let stamp = first.siblings(forKey: "k")[0].timestamp
        clock.set(milliseconds: 1)  // the wall clock was reset to the distant past
        let reopened = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, clock: clock)
        #expect(reopened.value(forKey: "k") == "v1")
        try reopened.setValue("v2", forKey: "k")
        let sibling = reopened.siblings(forKey: "k")[0]
        #expect(sibling.timestamp > stamp)
        #expect(sibling.dot == Dot(replica: "phone", counter: 2))
    }

    @Test func mergesPostServerChangeWithTheChangedKeys() async throws {
        let store = makeStore()
        let received = NotificationRecorder(store)
        var remote = ReplicatedMap()
        remote.write("b", forKey: "b", replica: "tablet", timestamp: HybridTimestamp(wallMilliseconds: 1, logical: 0))
        remote.write("a", forKey: "a", replica: "tablet", timestamp: HybridTimestamp(wallMilliseconds: 1, logical: 1))
        #expect(try store.merge(remote.asDelta) == ["a", "b"])
        #expect(try store.merge(remote.asDelta) == [])  // idempotent: nothing new, nothing posted
        #expect(received.items == [NotificationRecorder.Item(reason: ReplicatedKeyValueStore.serverChange, keys: ["a", "b"])])
        #expect(store.string(forKey: "a") == "a")
    }

    @Test func theAsyncStreamDeliversTheSameChanges() async throws {
        let store = makeStore()
        let stream = store.externalChanges()
        var remote = ReplicatedMap()
        remote.write(1, forKey: "x", replica: "tablet", timestamp: .zero)
        try store.merge(remote.asDelta)
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == ExternalChange(reason: .serverChange, keys: ["x"]))
    }

    @Test func aConcurrentRemoteWriteIsReportedAsAConflictAndNothingIsDropped() throws {
        let store = makeStore()
        let log = EventLog()
        let token = store.observe(log.append)
        defer { token.cancel() }
        clock.set(milliseconds: 1_000)
        try store.setValue("mine", forKey: "title")
        var remote = ReplicatedMap()
        remote.write("theirs", forKey: "title", replica: "tablet", timestamp: HybridTimestamp(wallMilliseconds: 2_000, logical: 0))
        try store.merge(remote.asDelta)
        // Last-writer-wins shows the later write, but both siblings are kept and reported.
        #expect(store.string(forKey: "title") == "theirs")
        #expect(Set(store.siblings(forKey: "title").compactMap(\.value)) == ["mine", "theirs"])
        #expect(store.conflictedKeys == ["title"])
        let conflict = try #require(log.conflicts.first)
        #expect(conflict.key == "title" && conflict.winner == "theirs" && conflict.siblings.count == 2)
        // A local write resolves the conflict: it supersedes every sibling.
        try store.setValue("resolved", forKey: "title")
        #expect(store.siblings(forKey: "title").count == 1)
        #expect(store.conflictedKeys.isEmpty)
    }

    @Test func policiesAreViewsAssignableByKeyAndPrefix() throws {
        var policies = MergePolicies(default: .lastWriterWins)
        policies.setPolicy(.multiValue, forKeysWithPrefix: "multi.")
        policies.setPolicy(.removeWins, forKeysWithPrefix: "multi.rw.")
        policies.setPolicy(.addWins, forKey: "multi.rw.exact")
        policies.setPolicy(.custom("max") { siblings in siblings.compactMap(\.value).max { $0.longLongConversion < $1.longLongConversion } },
                           forKey: "score")
        let store = makeStore(policies: policies)
        var remote = ReplicatedMap()
        clock.set(milliseconds: 5_000)
        for key in ["plain", "multi.a", "multi.rw.x", "multi.rw.exact", "score"] {
            try store.setValue(5, forKey: key)
            // Concurrent remote writes, older by the clock: 9, or a removal (a value then
            // a tombstone, since removing an absent key writes nothing).
            let stamp = HybridTimestamp(wallMilliseconds: 1, logical: 0)
            remote.write(9, forKey: key, replica: "tablet", timestamp: stamp)
            if key.hasPrefix("multi.rw.") { remote.write(nil, forKey: key, replica: "tablet", timestamp: stamp) }
        }
        try store.merge(remote.asDelta)
        #expect(store.value(forKey: "plain") == 5)              // lww: the local write is later
        #expect(store.value(forKey: "multi.a") == [5, 9])       // multi-value: both, canonical order
        #expect(store.value(forKey: "score") == 9)              // custom: the maximum
        #expect(store.value(forKey: "multi.rw.exact") == 5)     // add-wins for the exact key
        #expect(store.value(forKey: "multi.rw.x") == nil)       // remove-wins for the longer prefix
    }

    @Test func replicaPriorityIgnoresClocks() {
        let policy = MergePolicy.replicaPriority(["tablet", "phone"])
        let siblings = [
            Sibling(dot: Dot(replica: "phone", counter: 1), timestamp: HybridTimestamp(wallMilliseconds: 9, logical: 0), value: "phone"),
            Sibling(dot: Dot(replica: "tablet", counter: 1), timestamp: .zero, value: "tablet"),
        ]
        #expect(policy.resolve(siblings) == "tablet")
        #expect(MergePolicy.lastWriterWins.resolve(siblings) == "phone")
    }

    @Test func registeredDefaultsAreReadButNeverStoredOrSynced() throws {
        let store = makeStore()
        store.register(defaults: ["volume": 0.8, "name": "guest"] as [String: Any])
        #expect(store.double(forKey: "volume") == 0.8)
        #expect(store.dictionaryRepresentation.isEmpty)
        #expect(store.replicatedState.context.isEmpty)
        store.set(0.3, forKey: "volume")
        #expect(store.double(forKey: "volume") == 0.3)
        store.removeObject(forKey: "volume")
        #expect(store.double(forKey: "volume") == 0.8)  // falls through again
        let log = EventLog()
        let token = store.observe(log.append)
        store.register(defaults: ["bad": NSObject(), "fine": 1] as [String: Any])
        token.cancel()
        #expect(store.registeredDefaults["fine"] == nil)
        #expect(log.all.count == 1)
        if case .writeRejected(key: "bad", .invalidValue)? = log.all.first {} else { Issue.record("\(log.all)") }
    }

    @Test func codableValuesRoundTripThroughTheStore() throws {
        struct Profile: Codable, Equatable { var name: String; var favourites: [String] }
        try ReplicatedKeyValueStore.withBlankStore { store in
            try store.set(encoding: Profile(name: "Ada", favourites: ["Surrey"]), forKey: "profile")
            #expect(try store.decode(Profile.self, forKey: "profile") == Profile(name: "Ada", favourites: ["Surrey"]))
            #expect(try store.decode(Profile.self, forKey: "absent") == nil)
        }
    }

    @Test func blankStoresShareNothing() {
        ReplicatedKeyValueStore.withBlankStore { $0.set("x", forKey: "k") }
        ReplicatedKeyValueStore.withBlankStore { #expect($0.object(forKey: "k") == nil) }
    }

    @Test func theClockIsInjected() throws {
        let store = makeStore()
        clock.set(milliseconds: 42_000)
        try store.setValue(1, forKey: "k")
        #expect(store.siblings(forKey: "k")[0].timestamp == HybridTimestamp(wallMilliseconds: 42_000, logical: 0))
        try store.setValue(2, forKey: "k")
        #expect(store.siblings(forKey: "k")[0].timestamp == HybridTimestamp(wallMilliseconds: 42_000, logical: 1))
    }
}
