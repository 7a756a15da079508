import ConvergeSimulation
import ConvergeTestSupport
import Foundation
import Testing

/// The space-time diagram of `converge-sim view` and the charts of `compare --html`.
@Suite("Pictures of runs")
struct SpaceTimeDiagramTests {
    /// A run of `input` with its timeline.
    static func recorded(_ input: SimulationInput) -> SimulationResult {
        let simulation = Simulation(input)
        simulation.recordTimeline()
        return simulation.run()
    }

    @Test func theTimelineAgreesWithTheRunsOwnCountsAndRecordingChangesNothing() throws {
        let input = try SimulationInput(scenario: .standard, seed: 3)
        let plain = Simulation(input).run()
        let result = Self.recorded(input)
        #expect(result.digest == plain.digest, "recording a timeline changed the run")
        let timeline = try #require(result.timeline)
        let network = result.metrics.network
        // Counted apart from the metrics: every message the network was given, by fate.
        #expect(timeline.messages.count == network.messages)
        #expect(timeline.messages.map(\.bytes).reduce(0, +) == network.bytes)
        #expect(timeline.messages.filter { $0.fate == .lost }.count == network.lost)
        #expect(timeline.messages.filter { $0.fate == .droppedByFullQueue }.count == network.droppedByFullQueues)
        let droppedOnArrival = timeline.messages.flatMap(\.arrivals).filter { !$0.delivered }.count
        #expect(timeline.messages.filter { $0.fate == .droppedByFault }.count + droppedOnArrival == network.droppedByFaults)
        #expect(timeline.messages.map { max(0, $0.copies - 1) }.reduce(0, +) == network.duplicated)
        // Every copy sent arrives (or is dropped on arrival) after it was sent, in order.
        for message in timeline.messages where message.fate == .sent {
            #expect(message.arrivals.count <= message.copies)
            #expect(message.arrivals.allSatisfy { $0.atMs >= message.sentMs })
        }
        #expect(network.lost > 0 && network.duplicated > 0, "the scenario must exercise loss and duplication")
        #expect(timeline.healedMs != nil && timeline.firstViolationMs == nil)
    }

    @Test func aFailingRunsPageMarksItsFirstViolationAndFetchesNothing() throws {
        let input = try SimulationInput(scenario: .standard, seed: 0, variant: .noOpRemoves)
        let result = Self.recorded(input)
        #expect(!result.passed)
        let page = SpaceTimeDiagram.html(input: input, result: result, title: "a <failing> run", reproduce: "converge-sim replay x")
        #expect(page.hasPrefix("<!DOCTYPE html>") && page.contains("<svg"))
        #expect(page.contains(#"id="first-violation""#) && page.contains("Failed: \(result.violations.count) violation(s)"))
        #expect(page.contains("a &lt;failing&gt; run") && !page.contains("a <failing> run"), "text is escaped")
        for lane in ["hub"] + (0..<input.options.devices).map({ "device \($0)" }) { #expect(page.contains(">\(lane)</text>")) }
        let timeline = try #require(result.timeline)
        // One arrow per arrival, one cross per message lost or dropped.
        #expect(page.components(separatedBy: #"marker-end="url(#arrow)""#).count - 1 == timeline.messages.flatMap(\.arrivals).count)
        #expect(page.components(separatedBy: "lost by the network").count - 1 == timeline.messages.filter { $0.fate == .lost }.count)
        // Self-contained: no resource from anywhere (the SVG namespace is a name, not a fetch).
        #expect(!page.contains("src=\"http") && !page.contains("href=\"http") && !page.contains("url(http"))
        let passing = try SimulationInput(scenario: .standard, seed: 3)
        let passed = SpaceTimeDiagram.html(input: passing, result: Self.recorded(passing), title: "t", reproduce: "r")
        #expect(passed.contains("Passed: every checker held.") && !passed.contains(#"id="first-violation""#))
    }

    @Test func viewAndCompareHtmlWriteTheirPages() throws {
        let trace = ConvergeSim.temporaryFile("view.jsonl"), page = ConvergeSim.temporaryFile("view.html")
        #expect(try ConvergeSim.run(["run", "--seed", "0", "--devices", "3", "--operations", "150", "--trace", trace]).status == 0)
        let viewed = try ConvergeSim.run(["view", trace, "-o", page])
        #expect(viewed.status == 0 && viewed.output.contains("4 lanes, 0 violation(s); the run matches the trace's digest"), "\(viewed.output) \(viewed.errors)")
        #expect(try String(contentsOfFile: page, encoding: .utf8).contains("Passed: every checker held."))
        let noOutput = try ConvergeSim.run(["view", trace])
        #expect(noOutput.status == 2 && noOutput.errors.contains("view needs -o OUT.html"))
        let charts = ConvergeSim.temporaryFile("compare.html")
        let compared = try ConvergeSim.run(["compare", "Simulations/clock-skew.json", "--policies", "lww,multi-value", "--seeds", "0..<2",
                                            "--operations", "200", "--html", charts])
        #expect(compared.status == 0 && compared.output.contains("charts written to"), "\(compared.errors)")
        let html = try String(contentsOfFile: charts, encoding: .utf8)
        #expect(html.components(separatedBy: "<figure>").count - 1 >= 5 && html.contains("vs lww"))
    }
}
