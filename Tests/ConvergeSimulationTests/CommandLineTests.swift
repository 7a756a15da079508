import ConvergeTestSupport
import Foundation
import Testing

/// Runs the built `converge-sim` binary, end to end.
enum ConvergeSim {
    static var binary: URL { ChildProcess.executable("converge-sim") }
    static var packageRoot: URL { ChildProcess.packageRoot }

    static func run(_ arguments: [String]) throws -> ChildProcess.Outcome {
        try ChildProcess.run(binary, arguments, in: packageRoot)
    }

    static func temporaryFile(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("converge-sim-test-\(getpid())-\(name)").path
    }
}

@Suite("converge-sim end to end", .serialized)
struct CommandLineTests {
    @Test func quietPrintsOnlyFailuresAndTheSummary() throws {
        let passing = try ConvergeSim.run(["run", "--seeds", "0..<6", "--devices", "3", "--operations", "100", "--quiet"])
        #expect(passing.status == 0)
        #expect(passing.output.split(separator: "\n").count == 1 && passing.output.hasPrefix("6 runs of scenario"), "\(passing.output)")
        let failing = try ConvergeSim.run(["run", "--seeds", "0..<3", "--devices", "3", "--operations", "200", "--variant", "guessing-sender", "--quiet"])
        #expect(failing.status == 1)
        #expect(failing.output.contains("FAIL") && !failing.output.contains(": PASS"))
    }

    /// On a terminal a sweep of seeds shows one progress line, rewritten in place and erased
    /// at the end; in a log or a pipe (and on standard output) there is none.
    @Test func aProgressLineOnATerminalOnly() throws {
        let arguments = ["run", "--seeds", "0..<4", "--devices", "3", "--operations", "100", "--quiet"]
        let piped = try ConvergeSim.run(arguments)
        #expect(!piped.errors.contains("runs done") && !piped.output.contains("\r"))
        // `script` gives the run a pseudo-terminal (util-linux; skipped where it is missing).
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { return }
        let command = ([ConvergeSim.binary.path] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let terminal = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/script"), ["-qfc", command, "/dev/null"], in: ConvergeSim.packageRoot)
        #expect(terminal.status == 0)
        #expect(terminal.output.contains("\r4 of 4 runs done\u{1B}[K") && terminal.output.contains("4 runs of scenario"), "\(terminal.output)")
    }

    @Test func theSameSeedInTwoProcessesGivesByteIdenticalJSONAndTraces() throws {
        let (traceA, traceB) = (ConvergeSim.temporaryFile("a.jsonl"), ConvergeSim.temporaryFile("b.jsonl"))
        let common = ["run", "--seed", "11", "--devices", "3", "--operations", "300", "--json"]
        let a = try ConvergeSim.run(common + ["--trace", traceA])
        let b = try ConvergeSim.run(common + ["--trace", traceB])
        #expect(a.status == 0 && b.status == 0, "\(a.errors)")
        #expect(a.output == b.output)
        #expect(!a.output.isEmpty)
        let bytesA = try Data(contentsOf: URL(fileURLWithPath: traceA)), bytesB = try Data(contentsOf: URL(fileURLWithPath: traceB))
        #expect(bytesA == bytesB)
        let object = try JSONSerialization.jsonObject(with: Data(a.output.utf8)) as? [String: Any]
        for member in ["seed", "converged", "violations", "metrics", "digest"] { #expect(object?[member] != nil) }

        let replay = try ConvergeSim.run(["replay", traceA])
        #expect(replay.status == 0)
        #expect(replay.output.contains("replay matches the recorded digest"))
    }

    @Test func aFailingRunExitsWithOneAndPrintsTheReproduceCommand_andShrinkMakesItSmall() throws {
        let trace = ConvergeSim.temporaryFile("fail.jsonl")
        let failing = try ConvergeSim.run(["run", "--seed", "2", "--devices", "3", "--operations", "200", "--variant", "guessing-sender",
                                           "--trace", trace])
        #expect(failing.status == 1)
        #expect(failing.output.contains("reproduce: swift run converge-sim run --devices 3 --operations 200 --variant guessing-sender --seed 2"))
        let shrunkPath = ConvergeSim.temporaryFile("fail.shrunk.jsonl")
        let shrink = try ConvergeSim.run(["shrink", trace, "--output", shrunkPath])
        #expect(shrink.status == 1)
        // The shrunk run is told as a story: writes with their dots, the end state, what failed.
        #expect(shrink.output.contains("still fires"))
        for part in ["What happened (seed 2", " as d", "At the end:", "  hub: ", "  d0: ", "What failed:", "--story"] {
            #expect(shrink.output.contains(part), "\(part) in \(shrink.output)")
        }
        let replay = try ConvergeSim.run(["replay", shrunkPath])
        #expect(replay.status == 1)
        let story = try ConvergeSim.run(["replay", shrunkPath, "--story"])
        #expect(story.output.contains("What happened") && story.output.contains("What failed:"))

        // With --json, each violation names the checker that fired.
        let json = try ConvergeSim.run(["run", "--seed", "2", "--devices", "3", "--operations", "200", "--variant", "guessing-sender",
                                        "--json", "--no-determinism-check"])
        #expect(json.status == 1)
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        let violations = object?["violations"] as? [[String: Any]] ?? []
        #expect(!violations.isEmpty)
        #expect(violations.allSatisfy { $0["kind"] is String && $0["message"] is String })
        #expect(violations.contains { $0["kind"] as? String == "liveness" })
        #expect((object?["reproduce"] as? String)?.contains("--variant guessing-sender --seed 2") == true)
    }

    @Test func badUsageExitsWithTwoAndSaysWhy() throws {
        let cases: [([String], String)] = [
            (["run", "--frobnicate"], "unknown option --frobnicate"),
            (["run", "--seeds", "5..<2"], "is empty"),
            (["run", "--seeds", "a..b"], "--seeds needs a range"),
            (["run", "--policy", "newest"], "must be one of"),
            (["run", "--loss", "1.5"], "probability"),
            (["run", "--crashes", "-1"], "option \"crashes\" must be an integer in 0...10000, not -1"),
            (["compare", "--policies", "lww", "--policy", "lww"], "unknown option --policy for compare"),
            (["options", "extra"], "options takes no argument"),
            (["run", "Simulations/missing.json"], "cannot read scenario file"),
            (["compare"], "compare needs --policies"),
            (["replay"], "replay needs a TRACE"),
            (["launch"], "unknown command"),
        ]
        for (arguments, message) in cases {
            let outcome = try ConvergeSim.run(arguments)
            #expect(outcome.status == 2, "\(arguments)")
            #expect(outcome.errors.contains(message), "\(arguments): \(outcome.errors)")
        }
        let malformed = ConvergeSim.temporaryFile("bad.json")
        try "{\"devices\": \"many\"}".write(toFile: malformed, atomically: true, encoding: .utf8)
        let outcome = try ConvergeSim.run(["run", malformed])
        #expect(outcome.status == 2)
        #expect(outcome.errors.contains("option \"devices\" must be an integer"))
    }

    @Test func everyCommandHasHelp() throws {
        for command in [["--help"], ["run", "--help"], ["compare", "--help"], ["replay", "--help"], ["shrink", "--help"],
                        ["options", "--help"]] {
            let outcome = try ConvergeSim.run(command)
            #expect(outcome.status == 0)
            #expect(outcome.output.contains("converge-sim"))
        }
        // Help comes from the tables that parse: the option table's help for overrides.
        let run = try ConvergeSim.run(["run", "--help"])
        for flag in ["--seed N", "--seeds A..<B", "--trace FILE", "--variant NAME", "--devices N", "--loss P", "--topology hub|mesh|folder"] {
            #expect(run.output.contains(flag), "\(flag)")
        }
        #expect(run.output.contains("probability a message is lost: a probability in 0...1"))
        let compare = try ConvergeSim.run(["compare", "--help"])
        #expect(compare.output.contains("--policies A,B,..."))
        #expect(!compare.output.contains("--policy NAME"))
        let options = try ConvergeSim.run(["options"])
        #expect(options.status == 0)
        #expect(options.output.contains("crashes") && options.output.contains("an integer in 0...10000"))
    }

    @Test func compareRunsEveryPolicyOnTheSameSeeds() throws {
        let outcome = try ConvergeSim.run(["compare", "Simulations/clock-skew.json", "--policies", "lww,multi-value", "--seeds", "0..<2",
                                           "--operations", "300"])
        #expect(outcome.status == 0, "\(outcome.errors)")
        #expect(outcome.output.contains("lww") && outcome.output.contains("multi-value"))
        #expect(outcome.output.contains("± 95% confidence interval") && outcome.output.contains("difference from lww, paired on each seed"))
    }

    /// `compare --csv`: a header and one row per policy and seed, whose figures are the runs'
    /// own (read back from `--json` of the same seeds), for plotting elsewhere.
    @Test func compareWritesOneCSVRowPerPolicyAndSeed() throws {
        let arguments = ["compare", "Simulations/clock-skew.json", "--policies", "lww,multi-value", "--seeds", "0..<3", "--operations", "300"]
        let csv = try ConvergeSim.run(arguments + ["--csv"])
        #expect(csv.status == 0, "\(csv.errors)")
        let lines = csv.output.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        #expect(lines.count == 1 + 2 * 3)
        #expect(lines[0].prefix(5) == ["policy", "seed", "passed", "conflicts", "hidden_updates"])
        #expect(lines.allSatisfy { $0.count == lines[0].count })
        let json = try ConvergeSim.run(arguments + ["--json"])
        let runs = json.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(runs.count == 6)
        for row in lines.dropFirst() {
            let run = runs.first { ($0["seed"] as? String ?? "\($0["seed"] ?? "")") == row[1] && (($0["metrics"] as? [String: Any])?["policy"] as? [String: Any])?["name"] as? String == row[0] }
            let policy = (run?["metrics"] as? [String: Any])?["policy"] as? [String: Any]
            #expect(policy?["lostUpdates"] as? Int == Int(row[4]), "\(row)")
            #expect(policy?["conflictsResolvedByWrites"] as? Int == Int(row[3]), "\(row)")
        }
        // Under multi-value nothing is hidden, on every seed.
        #expect(lines.dropFirst().filter { $0[0] == "multi-value" }.allSatisfy { $0[4] == "0" })
    }
}
