@_spi(Testing) @testable import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Synchronization
import Testing

/// A hub that restarts from its durable encoding before every exchange, beside one that
/// never restarts: both must answer every request identically.
final class RestartingHub: SyncTransport {
    struct State {
        var live: HubSyncMachine
        var durable: [AccountID: [UInt8]] = [:]
        var mismatches: [String] = []
        var exchanges = 0
        var fullStates = 0
        /// Full states sent in pages, each for a span of keys.
        var fullStatePages = 0
        var compensations = 0
    }
    let state: Mutex<State>
    let clock: ManualClock
    /// A broken variant: forgets when each device was last seen on the way to disk (which no
    /// invariant covers, so only the comparison of answers can catch it).
    let forgetsLastSeen: Bool

    init(machine: HubSyncMachine, clock: ManualClock, forgetsLastSeen: Bool = false) {
        state = Mutex(State(live: machine))
        self.clock = clock
        self.forgetsLastSeen = forgetsLastSeen
    }

    func exchange(_ request: [UInt8]) async throws -> [UInt8] { try exchangeImmediately(request)! }

    func exchangeImmediately(_ request: [UInt8]) throws -> [UInt8]? {
        let message = try SyncMessage(encoded: request)
        switch message {
        case .push, .poll: break
        default: return nil
        }
        let now = clock.nowMilliseconds()
        return try state.withLock { state in
            var restarted = HubSyncMachine(quota: state.live.quota, retirementIntervalMilliseconds: state.live.retirementIntervalMilliseconds)
            restarted.maximumReplyBytes = state.live.maximumReplyBytes
            // A restarted hub writes its compensations under a new incarnation on purpose
            // (HubSyncMachine.writer): here both go on under the latest one, so that the
            // comparison covers everything else.
            restarted._reusesOwnCounters = true
            state.live._reusesOwnCounters = true
            for (stored, bytes) in state.durable { try restarted.restoreState(bytes, of: stored) }
            var made: [HubCompensation] = [], ignored: [HubCompensation] = []
            let answer = try state.live.receive(message, nowMilliseconds: now, compensations: &made)
            let again = try restarted.receive(message, nowMilliseconds: now, compensations: &ignored)
            state.exchanges += 1
            state.compensations += made.count
            if case .reply(let reply) = answer, reply.kind == .fullState {
                state.fullStates += 1
                if reply.keys != .all { state.fullStatePages += 1 }
            }
            if answer != again {
                state.mismatches.append("exchange \(state.exchanges): \(String(describing: answer)) but after a restart \(String(describing: again))")
            }
            for stored in state.live.accountIDs {
                if forgetsLastSeen, var damaged = state.live.accounts[stored] {
                    for device in damaged.members.keys { damaged.members[device]!.lastSeenMilliseconds = 0 }
                    var copy = state.live
                    copy.accounts[stored] = damaged
                    state.durable[stored] = copy.encodedState(of: stored)
                } else {
                    state.durable[stored] = state.live.encodedState(of: stored)
                }
            }
            return try answer.encoded()
        }
    }
}

@Suite("Hub persistence: the durable encoding of an account")
struct HubSyncMachinePersistenceTests {
    /// Random devices writing, removing, syncing and going silent past retirement, through
    /// a hub that restarts before every exchange; returns the mismatches and what the run exercised.
    static func run(seed: UInt64, forgetsLastSeen: Bool = false, maximumMessageBytes: Int? = nil) throws -> RestartingHub.State {
        var generator = Xoshiro256StarStar(seed: seed)
        let clock = ManualClock(startMilliseconds: 1_000)
        let quota = Quota(maximumKeyCount: 4, maximumTotalValueBytes: 48, maximumValueBytes: 20, maximumKeyBytes: 4)
        var machine = HubSyncMachine(quota: quota, retirementIntervalMilliseconds: 40)
        if let maximumMessageBytes { machine.maximumReplyBytes = maximumMessageBytes }
        let hub = RestartingHub(machine: machine, clock: clock, forgetsLastSeen: forgetsLastSeen)
        let accounts: [AccountID] = ["A", "B"]
        let stores = (0..<4).map { index in
            let store = ReplicatedKeyValueStore(replicaID: ReplicaID("d\(index)")!, transport: hub, account: accounts[index % 2],
                                                quota: .iCloud, clock: clock)
            if let maximumMessageBytes { store.maximumHubRequestBytes = maximumMessageBytes }
            return store
        }
        for _ in 0..<200 {
            let store = stores[generator.next(below: stores.count)]
            switch generator.next(below: 10) {
            case 0..<4: try? store.setValue(.string(String(repeating: "v", count: generator.next(below: 14))),
                                            forKey: generator.element(of: ["a", "b", "c", "d", "e", "fghij"]))
            case 4: store.removeObject(forKey: generator.element(of: ["a", "b", "c", "d", "e"]))
            case 5: clock.advance(byMilliseconds: UInt64(generator.next(below: 30)))
            default: _ = store.synchronize()
            }
        }
        for _ in 0..<3 { for store in stores { _ = store.synchronize() } }
        return hub.state.withLock { $0 }
    }

    @Test func aHubRestartedFromItsEncodingAnswersExactlyAsTheOneThatNeverStopped() throws {
        var exercised = (fullStates: 0, compensations: 0, exchanges: 0)
        for seed in 0..<12 as Range<UInt64> {
            let result = try Self.run(seed: seed)
            #expect(result.mismatches.isEmpty, "seed \(seed): \(result.mismatches.first ?? "")")
            exercised.fullStates += result.fullStates
            exercised.compensations += result.compensations
            exercised.exchanges += result.exchanges
        }
        // Not vacuous: returning devices, compensating writes and many exchanges happened.
        #expect(exercised.fullStates > 0 && exercised.compensations > 0 && exercised.exchanges > 500)
    }

    /// The same with messages so small that returning devices get their full state in
    /// pages: the progress through them (hub account format 3) survives every restart.
    @Test func aHubRestartedMidwayThroughAFullStateInPagesAnswersExactlyAsTheOneThatNeverStopped() throws {
        var (pages, exchanges) = (0, 0)
        for seed in 0..<12 as Range<UInt64> {
            let result = try Self.run(seed: seed, maximumMessageBytes: 110)
            #expect(result.mismatches.isEmpty, "seed \(seed): \(result.mismatches.first ?? "")")
            pages += result.fullStatePages
            exchanges += result.exchanges
        }
        #expect(pages > 0 && exchanges > 500, "\(pages) full-state pages in \(exchanges) exchanges")
    }

    @Test func theRoundTripCheckCatchesAnEncodingThatForgetsSomething() throws {
        let mismatches = try (0..<4 as Range<UInt64>).flatMap { try Self.run(seed: $0, forgetsLastSeen: true).mismatches }
        #expect(!mismatches.isEmpty)
    }

    @Test func theEncodingIsCanonicalAndDecodesBackToTheSameState() throws {
        let clock = ManualClock()
        let hub = InMemoryHub(retirementIntervalMilliseconds: 10, clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub, clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub, clock: clock)
        var machine = HubSyncMachine(retirementIntervalMilliseconds: 10)
        var compensations: [HubCompensation] = []
        phone.set("x", forKey: "k")
        tablet.set(true, forKey: "other")
        for store in [phone, tablet] {
            let request = try SyncMessage(encoded: try store.hubRequest().bytes)
            _ = try machine.receive(request, nowMilliseconds: clock.nowMilliseconds() + 5, compensations: &compensations)
        }
        machine.retireSilentMembers(nowMilliseconds: clock.nowMilliseconds() + 100)
        let bytes = try #require(machine.encodedState(of: .default))
        var restored = HubSyncMachine(retirementIntervalMilliseconds: 10)
        try restored.restoreState(bytes, of: .default)
        #expect(restored.encodedState(of: .default) == bytes)
        #expect(restored.state(of: .default) == machine.state(of: .default))
        #expect(restored.retiredMembers(of: .default) == ["phone", "tablet"])
        #expect(machine.encodedState(of: "nobody") == nil)
    }

    /// Found by the hub-state fuzz target: a well-formed state whose clock is behind a
    /// write it holds broke the hub's invariants once restored.
    @Test func aStateThatContradictsItselfIsRefused() throws {
        var machine = HubSyncMachine()
        var map = ReplicatedMap()
        map.write(.string("x"), forKey: "k", replica: "phone", timestamp: HybridTimestamp(wallMilliseconds: 1_700_000_000_000, logical: 0))
        _ = try machine.receive(SyncPush(account: .default, device: "phone", delta: map.asDelta), nowMilliseconds: 1_700_000_000_000)
        machine.accounts[.default]!.clock = HybridLogicalClock()
        let bytes = try #require(machine.encodedState(of: .default))
        var target = HubSyncMachine()
        var problem: MalformedInput.Problem?
        do { try target.restoreState(bytes, of: .default) } catch { if case .malformed(let input) = error { problem = input.problem } }
        #expect(problem == .inconsistent)
        #expect(target.accountIDs.isEmpty)
    }

    @Test func damagedOrForeignBytesAreRefusedAndChangeNothing() throws {
        var machine = HubSyncMachine()
        var compensations: [HubCompensation] = []
        let push = SyncPush(account: "A", device: "phone", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector()))
        _ = try machine.receive(.push(push), nowMilliseconds: 1, compensations: &compensations)
        let bytes = try #require(machine.encodedState(of: "A"))
        var target = HubSyncMachine()
        #expect(throws: ConvergeError.self) { try target.restoreState([0x00] + bytes.dropFirst(), of: "A") }
        #expect(throws: ConvergeError.self) { try target.restoreState([bytes[0], 9] + bytes.dropFirst(2), of: "A") }
        #expect(throws: ConvergeError.self) { try target.restoreState(Array(bytes.dropLast()), of: "A") }
        #expect(throws: ConvergeError.self) { try target.restoreState(bytes + [0], of: "A") }
        #expect(target.accountIDs.isEmpty)
        // Seeded mutations never crash the decoder, and what it accepts is canonical.
        var generator = Xoshiro256StarStar(seed: 16)
        for _ in 0..<20_000 {
            var mutated = bytes
            mutated[generator.next(below: mutated.count)] = UInt8(truncatingIfNeeded: generator.next())
            var scratch = HubSyncMachine()
            if (try? scratch.restoreState(mutated, of: "A")) != nil {
                if mutated[1] == 1 {
                    // The previous format, still read, is written back in the current one.
                    let current = try #require(scratch.encodedState(of: "A"))
                    var again = HubSyncMachine()
                    try again.restoreState(current, of: "A")
                    #expect(current[1] == HubSyncMachine.accountStateFormatVersion && again.encodedState(of: "A") == current)
                } else {
                    #expect(scratch.encodedState(of: "A") == mutated)
                }
            }
        }
    }
}
