@testable import Converge
import Testing

/// Each core type's `_checkInvariants()` catches a deliberately broken state, naming the
/// invariant; in debug builds it traps, and it runs after every mutation.
@Suite("Invariant checks catch broken states")
struct InvariantTests {
    static func sampleMap() -> ReplicatedMap {
        var map = ReplicatedMap()
        map.write("a", forKey: "k", replica: "phone", timestamp: HybridTimestamp(wallMilliseconds: 5, logical: 0))
        map.write("b", forKey: "other", replica: "tablet", timestamp: HybridTimestamp(wallMilliseconds: 6, logical: 0))
        return map
    }

    @Test func aSoundMapHasNoViolation() {
        let map = Self.sampleMap()
        #expect(map._invariantViolation() == nil)
        map._checkInvariants()
    }

    @Test func eachBrokenMapInvariantIsNamed() {
        var usage = Self.sampleMap()
        usage.usage.valueBytes += 1
        #expect(usage._invariantViolation()?.hasPrefix("usage 2 keys") == true, "\(String(describing: usage._invariantViolation()))")

        var uncovered = Self.sampleMap()
        uncovered.entries["k"]!.append(Sibling(dot: Dot(replica: "watch", counter: 1), timestamp: .zero, value: nil))
        #expect(uncovered._invariantViolation()?.contains("watch:1 of \"k\" is not covered by the context") == true)

        var unordered = Self.sampleMap()
        unordered.context.raise("watch", to: 1)
        unordered.entries["k"] = [Sibling(dot: Dot(replica: "watch", counter: 1), timestamp: .zero, value: "x"),
                                  Sibling(dot: Dot(replica: "phone", counter: 1), timestamp: .zero, value: "a")]
        #expect(unordered._invariantViolation()?.contains("not in strictly increasing dot order") == true)

        var empty = Self.sampleMap()
        empty.entries["k"] = []
        #expect(empty._invariantViolation() == "key \"k\" has an empty sibling list")

        var zero = Self.sampleMap()
        zero.context.entries.append((replica: "watch", counter: 0))
        #expect(zero._invariantViolation() == "context: a zero counter for watch")

        // Lookups search the replicas: they must stay in increasing order.
        var unorderedContext = VersionVector()
        unorderedContext.entries = [(replica: "watch", counter: 1), (replica: "phone", counter: 1)]
        #expect(unorderedContext._invariantViolation() == "watch before phone, not in increasing order")
    }

    @Test func quotaUsageMustBeConsistent() {
        #expect(QuotaUsage(keyCount: 2, valueBytes: 10)._invariantViolation() == nil)
        #expect(QuotaUsage(keyCount: -1, valueBytes: 0)._invariantViolation() == "negative key count -1")
        #expect(QuotaUsage(keyCount: 3, valueBytes: 2)._invariantViolation() == "2 value bytes for 3 live keys")
    }

    @Test func aBrokenStabilityTrackerIsCaught() {
        var tracker = StabilityTracker()
        tracker.observe(acknowledged: ["hub": VersionVector(["hub": 2, "phone": 1]), "phone": VersionVector(["phone": 1])])
        #expect(tracker._invariantViolation() == nil)
        var beyond = tracker
        beyond.candidates.append(StabilityTracker.Candidate(frontier: VersionVector(["phone": 4]), witnessed: VersionVector(["phone": 3])))
        #expect(beyond._invariantViolation() == "candidate 1 has frontier 4 for phone, beyond the 3 it witnessed")
        var crowded = tracker
        crowded.candidates = Array(repeating: crowded.candidates[0], count: StabilityTracker.maximumCandidates + 1)
        #expect(crowded._invariantViolation() == "65 candidates, more than 64")
    }

    @Test func aBrokenHubAccountIsCaught() throws {
        var hub = HubSyncMachine()
        var phone = ReplicatedMap()
        phone.write("v", forKey: "k", replica: "phone", timestamp: HybridTimestamp(wallMilliseconds: 100, logical: 0))
        _ = try hub.receive(SyncPush(account: .default, device: "phone", delta: phone.asDelta), nowMilliseconds: 1)
        #expect(hub._invariantViolation(of: .default) == nil)

        var acknowledged = hub
        acknowledged.accounts[.default]!.members["phone"]!.acknowledged = VersionVector(["phone": 9])
        #expect(acknowledged._invariantViolation(of: .default) == "phone acknowledged [phone:9], beyond the hub's context [phone:1]")

        var retired = hub
        retired.accounts[.default]!.retired["phone"] = VersionVector()
        #expect(retired._invariantViolation(of: .default) == "phone is both a member and retired")

        var clock = hub
        clock.accounts[.default]!.clock = HybridLogicalClock()
        #expect(clock._invariantViolation(of: .default)?.hasPrefix("state: the clock 0.0 is behind phone:1") == true)

        var state = hub
        state.accounts[.default]!.map.usage = QuotaUsage()
        #expect(state._invariantViolation(of: .default)?.hasPrefix("state: usage") == true)
    }

    /// The minimum of the acknowledgements the hub keeps by difference is checked against the
    /// members' own: one that missed a change, and one that computed it wrong, are caught.
    @Test func aHubWhoseKeptMinimumIsStaleIsCaught() throws {
        var hub = HubSyncMachine()
        var phone = ReplicatedMap()
        for counter in 1...2 {
            let before = phone.context
            phone.write(.integer(Int64(counter)), forKey: "k", replica: "phone", timestamp: HybridTimestamp(wallMilliseconds: 100, logical: UInt32(counter)))
            _ = try hub.receive(SyncPush(account: .default, device: "phone", delta: phone.delta(for: before), basis: before), nowMilliseconds: 1)
        }
        #expect(hub._invariantViolation(of: .default) == nil)

        var missed = hub
        missed.accounts[.default]!.acknowledgedMinimum.set("phone", to: VersionVector(["phone": 1]))
        #expect(missed._invariantViolation(of: .default) == "the acknowledgements the kept minimum holds are not the members' and the hub's")

        var neverRescans = AcknowledgedMinimum()
        neverRescans._neverRescans = true
        neverRescans.update(to: ["hub": VersionVector(["phone": 1]), "phone": VersionVector(["phone": 1])])
        neverRescans.update(to: ["hub": VersionVector(["phone": 2]), "phone": VersionVector(["phone": 2])])
        var wrong = hub
        wrong.accounts[.default]!.acknowledgedMinimum = neverRescans
        #expect(wrong._invariantViolation(of: .default) == "the kept minimum of the acknowledgements [phone:1] is not theirs, [phone:2]")
    }

    @Test func aStoreWhoseClockIsBehindItsStateIsCaught() throws {
        let store = ReplicatedKeyValueStore(replicaID: "phone", clock: ManualClock(startMilliseconds: 1_000))
        try store.setValue("v", forKey: "k")
        #expect(store._invariantViolation() == nil)
        store.state.withLock { $0.clock = HybridLogicalClock(latest: .zero) }
        #expect(store._invariantViolation() == "the clock 0.0 is behind phone:1 of \"k\" (1000.0)")
    }

    @Test func aStoreOpenedOnAStorageWhoseClockLagsMovesItsClockForward() throws {
        var map = ReplicatedMap()
        map.write("remote", forKey: "k", replica: "tablet", timestamp: HybridTimestamp(wallMilliseconds: 9_000, logical: 3))
        let storage = InMemoryStorage(StoredState(map: map, clock: .zero))
        let store = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage, clock: ManualClock(startMilliseconds: 1_000))
        #expect(store._invariantViolation() == nil)
        try store.setValue("local, later", forKey: "k")
        // Without the clock moving forward, this write would lose to the older one under
        // last-writer-wins.
        #expect(store.value(forKey: "k") == "local, later")
    }

    #if DEBUG
    /// What a child process that trapped wrote to its standard error.
    static func trapMessage(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    @Test func inDebugBuildsABrokenStateTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var map = InvariantTests.sampleMap()
            map.usage.keyCount += 1
            map._checkInvariants()
        }
        #expect(Self.trapMessage(result).contains("ReplicatedMap invariant broken: usage 3 keys"))
    }

    @Test func inDebugBuildsTheCheckRunsAfterEveryMutation() async {
        // A state broken behind the map's back is caught by the next ordinary write.
        let map = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var map = InvariantTests.sampleMap()
            map.usage.valueBytes = 0
            map.write("next", forKey: "k", replica: "phone", timestamp: .zero)
        }
        #expect(Self.trapMessage(map).contains("ReplicatedMap invariant broken: usage"))
        let hub = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var hub = HubSyncMachine()
            _ = try? hub.receive(SyncPush(account: .default, device: "phone", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector())),
                            nowMilliseconds: 1)
            hub.accounts[.default]!.retired["tablet"] = VersionVector()
            hub.accounts[.default]!.members["tablet"] = hub.accounts[.default]!.members["phone"]
            _ = try? hub.receive(SyncPush(account: .default, device: "phone", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector())),
                            nowMilliseconds: 2)
        }
        #expect(Self.trapMessage(hub).contains("HubSyncMachine invariant broken in default: tablet is both a member and retired"))
    }
    #else
    @Test func inReleaseBuildsTheCheckIsFree() {
        var map = Self.sampleMap()
        map.usage.keyCount += 1
        map._checkInvariants()  // does nothing: release builds pay nothing
        #expect(map._invariantViolation() != nil)
    }
    #endif
}
