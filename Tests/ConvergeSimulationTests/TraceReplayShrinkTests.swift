import ConvergeSimulation
import Foundation
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

    @Test(arguments: [SmallScenarios.plain, SmallScenarios.crashy, SmallScenarios.mesh, SmallScenarios.quotaPressure, SmallScenarios.folder,
                      SimulationCheckerTests.hubCrashes, SimulationCheckerTests.hubRestores, SimulationCheckerTests.clockJumps,
                      SimulationCheckerTests.diskFull])
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

    @Test func aShrunkTraceReplaysToTheDigestItRecorded() throws {
        // Shrinking keeps network decisions of the original run whose messages, in the
        // shrunk run, are sent after the heal; the trace must record them, or the replay
        // delivers those messages cleanly and differs (it did: `replay` of a shrunk trace
        // reported a replay violation).
        let input = try SimulationInput(scenario: .standard, seed: 0, variant: .noOpRemoves)
        let original = Simulation(input).run()
        #expect(!original.passed)
        let parsed = try ParsedTrace(text: Trace.text(input: input, result: original))
        let (shrunk, _) = Shrinker(maximumRuns: 600).shrink(parsed.input) { !Simulation($0).run().passed }
        let result = Simulation(shrunk).run()
        let written = try ParsedTrace(text: Trace.text(input: shrunk, result: result))
        #expect(Simulation(written.input).run().digest == written.recordedDigest)
    }

    @Test func messagesAreNamedByLinkAndNumber() {
        #expect(MessageID("d0>hub#3") == MessageID(from: .device(0), to: .hub, number: 3))
        #expect(MessageID("hub>d12#0")?.description == "hub>d12#0")
        for text in ["d0>hub", "x>hub#1", "d0>hub#-1", "d01>hub#1", "d0>hub#01", "d0>>hub#1", "d0>hub#1#2", ""] {
            #expect(MessageID(text) == nil, "\(text)")
        }
    }

    /// Numbering per link: a sync removed from one device's plan leaves the messages of
    /// every other device's links, and so the network's decisions about them, where they
    /// were. (With one number for the whole run, every later message was renumbered and the
    /// losses fell on other messages: a shrink stayed at 132 syncs after 3,000 runs.)
    @Test func removingOneDevicesEventsKeepsTheOtherLinksDecisions() throws {
        let scenario = SmallScenarios.make("lossy-links") {
            try $0.set(\.loss, to: 0.2)
            try $0.set(\.partitions, to: 0)
            try $0.set(\.offlinePeriods, to: 0)
            try $0.set(\.crashes, to: 0)
            try $0.set(\.hubOutages, to: 0)
            try $0.set(\.accountSwitches, to: 0)
        }
        let input = try SimulationInput(scenario: scenario, seed: 4)
        let original = RunStory.tell(input).result
        var without = try ParsedTrace(text: Trace.text(input: input, result: original)).input
        let d0Syncs = without.plan.indices.filter { without.plan[$0].event == .synchronize(device: 0) }
        try #require(!d0Syncs.isEmpty)
        without.plan.remove(at: d0Syncs[d0Syncs.count / 2])
        let altered = RunStory.tell(without).result
        func others(_ result: SimulationResult) -> [String] {
            let healed = result.timeline?.healedMs ?? .max
            return (result.timeline?.messages ?? []).filter { $0.sentMs < healed && $0.from != .device(0) && $0.to != .device(0) }
                .map { "\($0.link) at \($0.sentMs): \($0.fate)" }
        }
        #expect(others(original).contains { $0.hasSuffix("lost") }, "the test needs losses on the other links")
        #expect(others(altered) == others(original))
        #expect(altered.timeline!.messages.count < original.timeline!.messages.count)
    }

    @Test func shrinkingKeepsTheSameCheckerFiringAndTellsTheRunAsAStory() throws {
        var input = try SimulationInput(scenario: SmallScenarios.quotaPressure, seed: 0, variant: .forgetfulHub)
        var original = Simulation(input).run()
        var seed: UInt64 = 0
        while !original.violations.contains(where: { $0.kind == .compensation }) && seed < 10 {
            seed += 1
            input = try SimulationInput(scenario: SmallScenarios.quotaPressure, seed: seed, variant: .forgetfulHub)
            original = Simulation(input).run()
        }
        try #require(original.violations.contains { $0.kind == .compensation })
        let parsed = try ParsedTrace(text: Trace.text(input: input, result: original))
        let (shrunk, _) = Shrinker(maximumRuns: 1_500).shrink(parsed.input, keepingFailure: .compensation)
        let (result, story) = RunStory.tell(shrunk)
        #expect(result.violations.contains { $0.kind == .compensation })
        // Times normalised: the plan starts near 0 and its times are round.
        #expect((shrunk.plan.first?.timeMs ?? 0) < 100)
        #expect(shrunk.plan.allSatisfy { $0.timeMs % 10 == 0 })
        let text = story.joined(separator: "\n")
        print(text)
        #expect(story.first?.hasPrefix("What happened (seed \(seed), hub topology, lww") == true)
        // Who wrote what, with the dot each write got; what the messages carried.
        for case .set(let d, _, _) in shrunk.plan.map(\.event) { #expect(text.contains("d\(d) writes k")) }
        #expect(story.contains { $0.contains(" writes k") && $0.contains(" as d") })
        #expect(story.contains { $0.contains("hub → d") && $0.contains(" = d") })
        // What each replica holds at the end, and what failed.
        let end = try #require(story.firstIndex(of: "At the end:"))
        #expect(story[end + 1].hasPrefix("  hub: "))
        for d in 0..<3 { #expect(story.contains { $0.hasPrefix("  d\(d): ") }) }
        #expect(story.contains("What failed:"))
        #expect(story.contains { $0.hasPrefix("  compensation: ") })
    }

    @Test func aTraceOfTheOldNumberingIsRefusedWithWhatToDo() throws {
        let input = try SimulationInput(scenario: SmallScenarios.plain, seed: 1)
        var lines = Trace.lines(input: input, result: Simulation(input).run())
        lines[0] = lines[0].replacingOccurrences(of: "\"version\":3", with: "\"version\":2")
        #expect(throws: ScenarioError("line 1: unsupported trace version 2 (this converge-sim reads version 3; version 2 numbered messages for the whole run: run its seed again for a new trace)")) {
            try ParsedTrace(text: lines.joined(separator: "\n"))
        }
        let decision = #"{"type":"net","message":"d0>hub","delaysMs":[5]}"#
        #expect(throws: ScenarioError("line 2: \"message\" must name a link and a number on it, as \"d0>hub#3\"")) {
            try ParsedTrace(text: Trace.lines(input: input, result: Simulation(input).run())[0] + "\n" + decision)
        }
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
        #expect(throws: ScenarioError("x.json: option \"topology\" must be one of hub, mesh, folder, not \"ring\"")) {
            try Scenario(json: "{\"topology\": \"ring\"}", fileName: "x.json")
        }
        #expect(throws: ScenarioError.self) { try Scenario(json: "{\"devices\": 3", fileName: "x.json") }
        #expect(throws: ScenarioError.self) { try Scenario(json: "[1]", fileName: "x.json") }
        var scenario = Scenario()
        try? scenario.set(\.minValueBytes, to: 50)
        try? scenario.set(\.maxValueBytes, to: 10)
        #expect(throws: ScenarioError.self) { try scenario.resolved(seed: 1) }
    }

    @Test func errorsNameTheMemberThatIsWrong() {
        let cases: [(String, String)] = [
            ("{\"devcies\": 3}", "x.json: unknown option \"devcies\"; known options: devices, topology"),
            ("{\"devices\": \"many\"}", "x.json: option \"devices\" must be an integer in 1...64, not \"many\""),
            ("{\"devices\": 2.5}", "x.json: option \"devices\" must be an integer in 1...64, not 2.5"),
            ("{\"devices\": true}", "x.json: option \"devices\" must be an integer in 1...64, not true"),
            ("{\"devices\": null}", "x.json: option \"devices\" must be an integer in 1...64, not null"),
            ("{\"devices\": [3]}", "x.json: option \"devices\" must be an integer in 1...64, not an array or an object"),
            ("{\"devices\": 65}", "x.json: option \"devices\" must be an integer in 1...64, not 65"),
            ("{\"name\": 5}", "x.json: \"name\" must be a non-empty string"),
        ]
        for (text, message) in cases {
            do {
                _ = try Scenario(json: text, fileName: "x.json")
                Issue.record("\(text) was accepted")
            } catch {
                #expect(error.message.hasPrefix(message), "\(text): \(error.message)")
            }
        }
    }

    @Test func aNumberWithALeadingZeroIsRefused() throws {
        #expect(throws: ScenarioError.self) { try Scenario(json: "{\"devices\": 03}", fileName: "x.json") }
        do {
            _ = try Scenario(json: "{\"devices\": 03}", fileName: "x.json")
        } catch {
            #expect(error.message.hasPrefix("x.json: not valid JSON: "))
            #expect(error.message.contains("leading zero"), "\(error.message)")
        }
        let input = try SimulationInput(scenario: SmallScenarios.plain, seed: 1)
        var lines = Trace.lines(input: input, result: Simulation(input).run())
        lines[3] = "{\"type\":\"sync\",\"t\":05,\"device\":0}"
        #expect(throws: ScenarioError.self) { try ParsedTrace(text: lines.joined(separator: "\n")) }
    }

    @Test func aSurrogatePairIsOneCharacter() throws {
        let scenario = try Scenario(json: #"{"name": "\ud83d\ude00", "description": "a \ud83d\ude00 b", "devices": 3}"#, fileName: "x.json")
        #expect(scenario.name == "\u{1F600}")
        #expect(scenario.summary == "a \u{1F600} b")
        // A lone surrogate is not a character.
        #expect(throws: ScenarioError.self) { try Scenario(json: #"{"name": "\ud83d"}"#, fileName: "x.json") }
    }

    @Test func traceErrorsNameTheLineAndTheMember() throws {
        let input = try SimulationInput(scenario: SmallScenarios.plain, seed: 1)
        let lines = Trace.lines(input: input, result: Simulation(input).run())
        let cases: [(String, String)] = [
            ("{\"type\":\"sync\",\"t\":5,\"device\":\"d0\"}", "line 4: \"device\" must be an integer"),
            ("{\"type\":\"sync\",\"t\":5,\"device\":0.5}", "line 4: \"device\" must be an integer"),
            ("{\"type\":\"sync\",\"t\":-1,\"device\":0}", "line 4: \"t\" must be an integer in 0..."),
            ("{\"type\":\"jump\",\"t\":5}", "line 4: unknown event type \"jump\""),
            ("{\"t\":5}", "line 4: no \"type\""),
            ("{\"type\":\"net\",\"message\":\"d0>hub#1\",\"delaysMs\":[1,2,3]}", "line 4: \"delaysMs\" must be at most two"),
            ("{\"type\":\"net\",\"message\":1,\"delaysMs\":[1]}", "line 4: \"message\" must be a string"),
        ]
        for (line, message) in cases {
            var damaged = lines
            damaged[3] = line
            do {
                _ = try ParsedTrace(text: damaged.joined(separator: "\n"))
                Issue.record("\(line) was accepted")
            } catch {
                #expect(error.message.hasPrefix(message), "\(line): \(error.message)")
            }
        }
        var header = lines
        header[0] = header[0].replacingOccurrences(of: "\"devices\":3", with: "\"devices\":\"three\"")
        #expect(header[0] != lines[0])
        do {
            _ = try ParsedTrace(text: header.joined(separator: "\n"))
            Issue.record("a header with a bad option was accepted")
        } catch {
            #expect(error.message.contains("option \"devices\" must be an integer"), "\(error.message)")
        }
    }

    @Test func optionsLeftOpenAreDrawnFromTheSeedAndMarked() throws {
        let scenario = try Scenario(json: "{\"name\": \"n\", \"devices\": 5, \"loss\": 0.5}", fileName: "n.json")
        let a = try scenario.resolved(seed: 1), b = try scenario.resolved(seed: 1), c = try scenario.resolved(seed: 2)
        #expect(a == b)
        #expect(a != c)
        #expect(a.devices == 5 && a.loss == 0.5)
        #expect(!a.derived.contains("devices") && a.derived.contains("crashes"))
        #expect(try JSONCoding.decode(SimulationOptions.self, from: JSONCoding.encoded(a)) == a)
    }

    @Test func settingAPropertyThatIsNotAnOptionIsAnError() {
        var scenario = Scenario()
        #expect(throws: ScenarioError.self) { try scenario.set(\.scenarioName, to: "other") }
        #expect(throws: ScenarioError("option \"devices\" must be an integer in 1...64, not 0")) { try scenario.set(\.devices, to: 0) }
        #expect(scenario.given.isEmpty)
    }

    @Test func theDocumentationExampleRuns() throws {
        var scenario = Scenario(name: "small")
        try scenario.set(\.devices, to: 3)
        try scenario.set(\.operations, to: 300)
        try scenario.set(\.topology, to: .mesh)

        let result = SimulationRunner.run(try SimulationInput(scenario: scenario, seed: 7))
        #expect(result.passed, "\(result.violations)")
        #expect(result.options.devices == 3 && result.options.topology == .mesh)
        #expect(result.metrics.convergence.livenessMs != nil)
    }

    @Test func jsonOutputIsSortedCompactAndStable() throws {
        #expect(JSONCoding.encoded(Violation(.lostWrite, "a/b")) == #"{"kind":"lostWrite","message":"a/b"}"#)
        var scenario = SmallScenarios.plain
        try scenario.set(\.operations, to: 0)
        let result = Simulation(try SimulationInput(scenario: scenario, seed: 4)).run()
        let metrics = JSONCoding.encoded(result.metrics)
        // Absent quantiles are null, not left out; members are in name order.
        #expect(metrics.contains(#""propagationMs":{"max":null,"p50":null,"p90":null,"p99":null}"#), "\(metrics)")
        #expect(metrics.hasPrefix(#"{"checks":{"#))
        #expect(try JSONDecoder().decode(SimulationMetrics.self, from: Data(metrics.utf8)) == result.metrics)
    }
}
