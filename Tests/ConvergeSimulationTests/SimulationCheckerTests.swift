import ConvergeSimulation
import Testing

/// Small scenarios that finish quickly in a debug build.
enum SmallScenarios {
    static func make(_ name: String, _ options: [(String, JSON)]) -> Scenario {
        var scenario = Scenario(name: name)
        try! scenario.set("devices", .int(3))
        try! scenario.set("operations", .int(300))
        for (key, value) in options { try! scenario.set(key, value) }
        return scenario
    }

    static let plain = make("small", [])
    static let quotaPressure = make("small-quota", [
        ("keys", .int(12)), ("minValueBytes", .int(16)), ("maxValueBytes", .int(100)), ("quotaKeys", .int(4)),
        ("quotaTotalBytes", .int(240)), ("quotaValueBytes", .int(90)), ("setWeight", .int(60)), ("removeWeight", .int(10)),
    ])
    static let crashy = make("small-crashy", [("crashes", .int(12)), ("restartMs", .int(50)), ("flushIntervalMs", .int(300)),
                                              ("syncWeight", .int(20))])
    static let mesh = make("small-mesh", [("topology", .string("mesh")), ("devices", .int(5))])

    /// The violations of the first seeds' runs, one list per seed.
    static func violations(_ scenario: Scenario, variant: BrokenVariant? = nil, seeds: Range<UInt64> = 0..<6,
                           checkDeterminism: Bool = false) -> [[String]] {
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

    static func expectCaught(_ violations: [[String]], prefix: String, _ comment: Comment) {
        let caught = violations.filter { list in list.contains { $0.hasPrefix(prefix) } }.count
        #expect(caught > 0, comment)
        print("\(comment): caught with \"\(prefix)\" in \(caught) of \(violations.count) seeds")
    }

    @Test func convergenceCatchesASenderThatGuessesThePeersVersionVector() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.plain, variant: .guessingSender), prefix: "liveness", "guessing sender (hub)")
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.mesh, variant: .guessingSender), prefix: "liveness", "guessing sender (mesh)")
    }

    @Test func convergenceCatchesAPolicyThatDependsOnWhoReads() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.plain, variant: .readerDependentPolicy), prefix: "liveness", "reader-dependent policy")
    }

    @Test func lawCheckerCatchesANonCommutativeJoin() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.plain, variant: .leftBiasedJoin), prefix: "CRDT laws", "left-biased join")
    }

    @Test func quotaCheckerCatchesAHubThatEnforcesNoQuota() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.quotaPressure, variant: .unenforcedQuota), prefix: "quota", "unenforced quota")
    }

    @Test func checkersCatchAHubThatForgetsCompensatingWrites() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.quotaPressure, variant: .forgetfulHub), prefix: "liveness", "forgetful hub")
    }

    @Test func convergenceCatchesEarlyTombstoneCollection() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.plain, variant: .earlyCollection), prefix: "liveness", "early collection")
    }

    @Test func lostWriteCheckerCatchesSendingWhatTheDiskHasNotMadeDurable() {
        let violations = SmallScenarios.violations(SmallScenarios.crashy, variant: .sendsBeforeFlush, seeds: 0..<12)
        let caught = violations.filter { list in list.contains { $0.hasPrefix("lost write") || $0.hasPrefix("liveness") } }.count
        #expect(caught > 0)
    }

    @Test func determinismCheckerCatchesARunThatReadsTheSystemsRandomness() {
        Self.expectCaught(SmallScenarios.violations(SmallScenarios.plain, variant: .nondeterministic, seeds: 0..<2, checkDeterminism: true),
                          prefix: "determinism", "nondeterministic run")
    }
}
