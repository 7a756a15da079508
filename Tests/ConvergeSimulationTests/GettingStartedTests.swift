import ConvergeSimulation
import Testing

/// The code of `ConvergeSimulation.docc/GettingStarted.md`, so the article's example runs.
@Suite("The simulator's getting-started article")
struct GettingStartedTests {
    @Test func aScenarioRunsOverSeedsAndEveryRunPasses() throws {
        let scenario = try Scenario(json: #"{"name": "mine", "devices": 4, "returns": 1, "operations": 200}"#, fileName: "mine.json")
        var failures: [UInt64] = []
        for seed in 0..<5 as Range<UInt64> {
            let result = SimulationRunner.run(try SimulationInput(scenario: scenario, seed: seed))
            if !result.passed { failures.append(seed) }
        }
        #expect(failures.isEmpty)
    }
}
