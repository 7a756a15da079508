import ConvergeSimulation
import Testing

@Suite("Traces, replay and shrinking")
struct TraceReplayShrinkTests {
    @Test func theSameSeedGivesTheSameDigestAndTrace() throws {
        let input = try SimulationInput(scenario: SmallScenarios.plain, seed: 7)
        let first = Simulation(input).run(), second = Simulation(input).run()
        #expect(first.digest == second.digest)
        #expect(Trace.text(input: input, result: first) == Trace.text(input: input, result: second))
        let other = Simulation(try SimulationInput(scenario: SmallScenarios.plain, seed: 8)).run()
        #expect(other.digest != first.digest)
    }

    @Test(arguments: [SmallScenarios.plain, SmallScenarios.crashy, SmallScenarios.mesh, SmallScenarios.quotaPressure])
    func replayingATraceReproducesTheReport(scenario: Scenario) throws {
        let input = try SimulationInput(scenario: scenario, seed: 3)
        let original = Simulation(input).run()
        let parsed = try ParsedTrace(text: Trace.text(input: input, result: original))
        #expect(parsed.input.recordedFates != nil)
        let replayed = Simulation(parsed.input).run()
        #expect(replayed.digest == original.digest)
        #expect(replayed.metrics == original.metrics)
        #expect(replayed.violations == original.violations)
        #expect(parsed.recordedDigest == original.digest)
    }

    @Test func shrinkingAFailingRunGivesAFewEventsThatStillFail() throws {
        // A hub that forgets compensating writes, under quota pressure.
        var input = try SimulationInput(scenario: SmallScenarios.quotaPressure, seed: 0, variant: .forgetfulHub)
        var original = Simulation(input).run()
        var seed: UInt64 = 0
        while original.passed && seed < 10 {
            seed += 1
            input = try SimulationInput(scenario: SmallScenarios.quotaPressure, seed: seed, variant: .forgetfulHub)
            original = Simulation(input).run()
        }
        #expect(!original.passed)
        let parsed = try ParsedTrace(text: Trace.text(input: input, result: original))
        let (shrunk, runs) = Shrinker(maximumRuns: 1_500).shrink(parsed.input) { !Simulation($0).run().passed }
        let result = Simulation(shrunk).run()
        print("shrunk \(input.plan.count) planned events to \(shrunk.plan.count) in \(runs) runs: \(shrunk.plan.map(\.event))")
        #expect(!result.passed)
        #expect(shrunk.plan.count <= 12)
        // The shrunk trace is a trace like any other: it replays to the same failure.
        let reparsed = try ParsedTrace(text: Trace.text(input: shrunk, result: result))
        #expect(Simulation(reparsed.input).run().violations == result.violations)
    }

    @Test func malformedTracesAreRefusedWithTheLine() throws {
        let input = try SimulationInput(scenario: SmallScenarios.plain, seed: 1)
        var lines = Trace.lines(input: input, result: Simulation(input).run())
        #expect(throws: ScenarioError.self) { try ParsedTrace(text: "") }
        #expect(throws: ScenarioError("line 1: not a converge-sim trace (no \"converge-sim-trace\" header)")) {
            try ParsedTrace(text: "{\"type\":\"other\"}")
        }
        lines[3] = "{\"type\":\"set\",\"t\":5,\"device\":99,\"key\":0,\"valueBytes\":3}"
        #expect(throws: ScenarioError("line 4: \"device\" must be an integer in 0...2")) {
            try ParsedTrace(text: lines.joined(separator: "\n"))
        }
        lines[3] = "not json"
        #expect(throws: ScenarioError.self) { try ParsedTrace(text: lines.joined(separator: "\n")) }
    }
}

@Suite("Scenario files and options")
struct ScenarioTests {
    @Test func unknownOptionsWrongTypesAndBadRangesAreClearErrors() {
        #expect(throws: ScenarioError.self) { try Scenario(json: "{\"devcies\": 3}", fileName: "x.json") }
        #expect(throws: ScenarioError("x.json: option \"loss\" must be a probability in 0...1, not 2")) {
            try Scenario(json: "{\"loss\": 2}", fileName: "x.json")
        }
        #expect(throws: ScenarioError("x.json: option \"topology\" must be one of hub, mesh, not \"ring\"")) {
            try Scenario(json: "{\"topology\": \"ring\"}", fileName: "x.json")
        }
        #expect(throws: ScenarioError.self) { try Scenario(json: "{\"devices\": 3,}", fileName: "x.json") }
        #expect(throws: ScenarioError.self) { try Scenario(json: "[1]", fileName: "x.json") }
        var scenario = Scenario()
        try? scenario.set("minValueBytes", .int(50))
        try? scenario.set("maxValueBytes", .int(10))
        #expect(throws: ScenarioError.self) { try scenario.resolved(seed: 1) }
    }

    @Test func optionsLeftOpenAreDrawnFromTheSeedAndMarked() throws {
        let scenario = try Scenario(json: "{\"name\": \"n\", \"devices\": 5, \"loss\": 0.5}", fileName: "n.json")
        let a = try scenario.resolved(seed: 1), b = try scenario.resolved(seed: 1), c = try scenario.resolved(seed: 2)
        #expect(a == b)
        #expect(a != c)
        #expect(a.devices == 5 && a.loss == 0.5)
        #expect(!a.derived.contains("devices") && a.derived.contains("crashes"))
        #expect(try SimulationOptions(json: a.json) == a)
    }

    @Test func jsonRoundTripsAndPrintsNumbersStably() throws {
        let text = #"{"a":[1,-2,0.25,true,null],"b":"x\"y\n","c":{}}"#
        #expect(try JSON(parsing: text).serialized() == text)
        #expect(JSON.double(0.1 + 0.2).serialized() == "0.3")
        #expect(JSON.double(2.0).serialized() == "2")
        #expect(throws: JSONParseError.self) { try JSON(parsing: "{\"a\":1,\"a\":2}") }
        #expect(throws: JSONParseError.self) { try JSON(parsing: "[1,]") }
    }
}
