import ConvergeSimulation
import Testing

/// Small scenarios that finish quickly in a debug build.
enum SmallScenarios {
    static func make(_ name: String, _ options: (inout Scenario) throws -> Void = { _ in }) -> Scenario {
        var scenario = Scenario(name: name)
        try! scenario.set(\.devices, to: 3)
        try! scenario.set(\.operations, to: 300)
        try! options(&scenario)
        return scenario
    }

    static let plain = make("small")
    static let quotaPressure = make("small-quota") {
        try $0.set(\.keys, to: 12)
        try $0.set(\.minValueBytes, to: 16)
        try $0.set(\.maxValueBytes, to: 100)
        try $0.set(\.quotaKeys, to: 4)
        try $0.set(\.quotaTotalBytes, to: 240)
        try $0.set(\.quotaValueBytes, to: 90)
        try $0.set(\.setWeight, to: 60)
        try $0.set(\.removeWeight, to: 10)
    }
    static let crashy = make("small-crashy") {
        try $0.set(\.crashes, to: 12)
        try $0.set(\.restartMs, to: 50)
        try $0.set(\.flushIntervalMs, to: 300)
        try $0.set(\.syncWeight, to: 20)
    }
    static let mesh = make("small-mesh") {
        try $0.set(\.topology, to: .mesh)
        try $0.set(\.devices, to: 5)
    }

    /// The violations of the first seeds' runs, one list per seed.
    static func violations(_ scenario: Scenario, variant: BrokenVariant? = nil, seeds: Range<UInt64> = 0..<6,
                           checkDeterminism: Bool = false) -> [[Violation]] {
        seeds.map { seed in
            var input = try! SimulationInput(scenario: scenario, seed: seed, variant: variant)
            if variant == .nondeterministic { input.ambientJitter = { Int.random(in: 0...3) } }
            return SimulationRunner.run(input, checkDeterminism: checkDeterminism).violations
        }
    }
}

/// Each checker passes the real system and catches a deliberately broken variant.
@Suite("Simulation checkers catch broken variants")
struct SimulationCheckerTests {
    @Test(arguments: [SmallScenarios.plain, SmallScenarios.quotaPressure, SmallScenarios.crashy, SmallScenarios.mesh])
    func theRealSystemPassesEveryChecker(scenario: Scenario) {
        for (seed, violations) in SmallScenarios.violations(scenario, checkDeterminism: true).enumerated() {
            #expect(violations.isEmpty, "scenario \(scenario.name) seed \(seed): \(violations)")
        }
    }

    /// Expects the checker of `kind` to fire on some seed, and names it.
    static func expectCaught(_ violations: [[Violation]], by kinds: Set<Violation.Kind>, _ comment: Comment) {
        let caught = violations.filter { list in list.contains { kinds.contains($0.kind) } }.count
        #expect(caught > 0, comment)
        print("\(comment): caught by \(kinds.map(\.rawValue).sorted()) in \(caught) of \(violations.count) seeds")
    }

    @Test func convergenceCatchesASenderThatGuessesThePeersVersionVector() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.plain, variant: .guessingSender), by: [.liveness], "guessing sender (hub)")
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.mesh, variant: .guessingSender), by: [.liveness], "guessing sender (mesh)")
    }

    @Test func convergenceCatchesAPolicyThatDependsOnWhoReads() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.plain, variant: .readerDependentPolicy), by: [.liveness], "reader-dependent policy")
    }

    @Test func lawCheckerCatchesANonCommutativeJoin() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.plain, variant: .leftBiasedJoin), by: [.crdtLaws], "left-biased join")
    }

    @Test func quotaCheckerCatchesAHubThatEnforcesNoQuota() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.quotaPressure, variant: .unenforcedQuota), by: [.quota], "unenforced quota")
    }

    @Test func checkersCatchAHubThatForgetsCompensatingWrites() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.quotaPressure, variant: .forgetfulHub), by: [.liveness], "forgetful hub")
    }

    @Test func convergenceCatchesEarlyTombstoneCollection() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.plain, variant: .earlyCollection), by: [.liveness], "early collection")
    }

    @Test func lostWriteCheckerCatchesSendingWhatTheDiskHasNotMadeDurable() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.crashy, variant: .sendsBeforeFlush, seeds: 0..<12),
                          by: [.lostWrite, .liveness], "sends before flush")
    }

    @Test func determinismCheckerCatchesARunThatReadsTheSystemsRandomness() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.plain, variant: .nondeterministic, seeds: 0..<2, checkDeterminism: true),
                          by: [.determinism], "nondeterministic run")
    }

    @Test func invariantsAreCheckedAfterEveryStepInDebugBuildsOnly() throws {
        for scenario in [SmallScenarios.crashy, SmallScenarios.mesh, SmallScenarios.quotaPressure] {
            let simulation = Simulation(try SimulationInput(scenario: scenario, seed: 1))
            let result = simulation.run()
            #expect(result.metrics.checks.events > 0)
            #if DEBUG
            #expect(simulation.invariantChecks == result.metrics.checks.events, "\(scenario.name)")
            #else
            #expect(simulation.invariantChecks == 0, "\(scenario.name)")
            #endif
            #expect(!result.violations.contains { $0.kind == .invariants }, "\(scenario.name): \(result.violations)")
        }
    }
}
