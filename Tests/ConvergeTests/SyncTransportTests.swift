// Transports written as an app would write them: this file sees only Converge's public
// API (no @testable import), so what it does is what any transport outside the package
// can do.
import Converge
import ConvergeSimulation
import Synchronization
import Testing

/// A transport that moves bytes to a hub only asynchronously, as a network client does,
/// and fails some exchanges on purpose: the request is lost (the hub never sees it), the
/// answer is lost (the hub applied the request), the answer arrives damaged, or the
/// request is sent twice.
actor FaultyTransport: SyncTransport {
    enum Fault: CaseIterable {
        case requestLost, answerLost, answerDamaged, requestDuplicated
    }

    struct Lost: Error {}

    let hub: InMemoryHub
    private var generator: Xoshiro256StarStar
    private let faultProbability: Double
    /// Exchanges that failed on purpose (each must surface as an error from `sync()`).
    private(set) var failuresInjected = 0
    private(set) var exchanges = 0

    init(hub: InMemoryHub, seed: UInt64, faultProbability: Double) {
        self.hub = hub
        generator = Xoshiro256StarStar(seed: seed)
        self.faultProbability = faultProbability
    }

    func exchange(_ request: [UInt8]) async throws -> [UInt8] {
        exchanges += 1
        guard faulty && generator.chance(faultProbability) else { return try hub.exchange(request) }
        switch generator.element(of: Fault.allCases) {
        case .requestLost:
            failuresInjected += 1
            throw Lost()
        case .answerLost:
            _ = try hub.exchange(request)
            failuresInjected += 1
            throw Lost()
        case .answerDamaged:
            var answer = try hub.exchange(request)
            answer[generator.next(below: min(answer.count, 3))] ^= 0xFF  // the header: never a valid message
            failuresInjected += 1
            return answer
        case .requestDuplicated:
            _ = try hub.exchange(request)
            return try hub.exchange(request)
        }
    }

    /// Stops the faults.
    func heal() { faulty = false }
    private var faulty = true
}

/// A transport that answers only asynchronously and can be told to fail every exchange.
final class AsyncOnlyTransport: SyncTransport {
    let hub: InMemoryHub
    let failing = Mutex(false)
    let calls = Mutex(0)

    init(hub: InMemoryHub) { self.hub = hub }

    func exchange(_ request: [UInt8]) async throws -> [UInt8] {
        calls.withLock { $0 += 1 }
        await Task.yield()
        if failing.withLock({ $0 }) { throw FaultyTransport.Lost() }
        return try hub.exchange(request)
    }
}

@Suite("Transports written outside Converge sync stores through the public seam")
struct SyncTransportTests {
    let clock = ManualClock()

    @Test func storesSyncThroughATransportThatOnlyMovesBytes() async throws {
        let hub = InMemoryHub(clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", transport: AsyncOnlyTransport(hub: hub), clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", transport: AsyncOnlyTransport(hub: hub), clock: clock)
        let received = NotificationRecorder(tablet)
        phone.set(["Surrey"], forKey: "FavouriteCounties")
        try await phone.sync()
        try await tablet.sync()
        #expect(tablet.array(forKey: "FavouriteCounties") as? [String] == ["Surrey"])
        #expect(received.items == [NotificationRecorder.Item(reason: ReplicatedKeyValueStore.serverChange, keys: ["FavouriteCounties"])])
        #expect(phone.replicatedState == tablet.replicatedState)
    }

    /// Five devices write for a while through transports that lose, damage and duplicate
    /// a third of their exchanges; every lost exchange surfaces as an error, nothing is
    /// lost, and once the faults stop, a few rounds of `sync()` make every store equal.
    @Test(arguments: 0..<4 as Range<UInt64>)
    func failedExchangesThrowAndStoresConvergeAfterRetries(seed: UInt64) async throws {
        let hub = InMemoryHub(clock: clock)
        var generator = Xoshiro256StarStar(seed: seed)
        let transports = (0..<5).map { FaultyTransport(hub: hub, seed: seed &* 31 &+ UInt64($0), faultProbability: 0.35) }
        let stores = transports.indices.map { index in
            ReplicatedKeyValueStore(replicaID: ReplicaID("device-\(index)")!, transport: transports[index], clock: clock)
        }
        var lastWritten: [String: Value] = [:]
        var errorsThrown = 0
        for step in 0..<200 {
            let device = generator.next(below: stores.count)
            if generator.chance(0.5) {
                // Each device writes keys of its own, so the last write of each key must win everywhere.
                let key = "d\(device)-k\(generator.next(below: 4))"
                let value = Value.integer(Int64(step))
                try stores[device].setValue(value, forKey: key)
                lastWritten[key] = value
            } else {
                do { try await stores[device].sync() } catch { errorsThrown += 1 }
            }
            clock.advance(byMilliseconds: 1)
        }
        var injected = 0
        for transport in transports { injected += await transport.failuresInjected }
        #expect(injected > 10, "the faults must actually happen")
        #expect(errorsThrown == injected, "every failed exchange surfaces as a thrown error, and only those")

        for transport in transports { await transport.heal() }
        for _ in 0..<2 { for store in stores { try await store.sync() } }
        for store in stores {
            #expect(store.replicatedState == hub.state(), "\(store.replicaID) differs from the hub")
            for (key, value) in lastWritten { #expect(store.value(forKey: key) == value, "\(store.replicaID) lost \(key)") }
        }
    }

    @Test func synchronizeSchedulesASyncWhenTheTransportCannotAnswerAtOnce() async throws {
        let hub = InMemoryHub(clock: clock)
        let transport = AsyncOnlyTransport(hub: hub)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", transport: transport, clock: clock)
        phone.set("hello", forKey: "greeting")
        #expect(phone.synchronize())
        try await waitUntil { hub.state().entries["greeting"] != nil }

        transport.failing.withLock { $0 = true }
        let callsBefore = transport.calls.withLock { $0 }
        phone.set("again", forKey: "greeting")
        #expect(phone.synchronize(), "nothing has failed yet: the sync is only scheduled")
        // Once the scheduled sync has failed, synchronize() says so (and schedules a retry).
        try await waitUntil { transport.calls.withLock { $0 } > callsBefore && !phone.synchronize() }
        transport.failing.withLock { $0 = false }
        try await waitUntil { phone.synchronize() && hub.state().visibleValue(forKey: "greeting", policy: .lastWriterWins) == "again" }
    }

    @Test func anAnswerOfAnotherAccountIsAnErrorAndChangesNothing() async throws {
        let hub = InMemoryHub(clock: clock)
        let bob = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub, account: "bob", clock: clock)
        bob.set("bob's note", forKey: "note")
        #expect(bob.synchronize())
        /// Forwards every request as if it came from bob's account.
        struct MisroutingTransport: SyncTransport {
            let hub: InMemoryHub
            let bob: ReplicatedKeyValueStore
            func exchange(_ request: [UInt8]) async throws -> [UInt8] {
                _ = request
                return try hub.exchange(SyncMessage.push(DeviceSyncMachine(device: "tablet", account: "bob").push(from: bob.replicatedState)).encoded())
            }
        }
        let alice = ReplicatedKeyValueStore(replicaID: "phone", transport: MisroutingTransport(hub: hub, bob: bob), account: "alice", clock: clock)
        await #expect(throws: ConvergeError.self) { try await alice.sync() }
        #expect(alice.replicatedState.entries.isEmpty)
    }

    /// Polls `condition` for up to ten seconds.
    private func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<1_000 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the condition never held")
    }
}
