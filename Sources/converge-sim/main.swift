import ConvergeSimulation
import Foundation

// converge-sim: runs deterministic simulations of Converge replicas.
// Exit codes: 0 every run passed; 1 a checker failed (the reproduce command is printed);
// 2 bad usage.

let generalHelp = """
    converge-sim: deterministic simulations of Converge replicas syncing over a hostile network

    USAGE
      converge-sim                       run the default scenario over seeds 0..<5
      converge-sim run [SCENARIO.json] [--seed N | --seeds A..<B] [--devices N]
                       [--operations N] [--policy NAME] [--topology hub|mesh]
                       [--loss P] [--duplicate P] [--trace FILE] [--json] [--jobs N]
      converge-sim compare [SCENARIO.json] --policies A,B,... [--seeds A..<B] [--json]
      converge-sim replay TRACE [--json]
      converge-sim shrink TRACE [--output FILE]
      converge-sim options               list every scenario option
      converge-sim COMMAND --help

    Exit codes: 0 every run passed, 1 a checker failed, 2 bad usage.
    Policies: \(PolicyName.all.joined(separator: ", ")).
    """

let runHelp = """
    converge-sim run [SCENARIO.json] [options]

    Runs a scenario (a JSON file of Simulations/, or the default one) for one seed or a
    range of seeds. Options the scenario leaves open are drawn from the seed and printed.
    Each run has a safety phase (faults on, invariants after every step) and a liveness
    phase (faults healed; replicas must converge). Every run is executed twice to check
    that it is deterministic.

      --seed N            one seed (prints every option)
      --seeds A..<B       a sweep (default 0..<5), across all cores; quote it in a shell
      --devices N, --operations N, --policy NAME, --topology hub|mesh,
      --loss P, --duplicate P
                          override the scenario
      --trace FILE        write the run's trace (JSON Lines; needs --seed)
      --json              one JSON object per run per line
      --jobs N            threads for a sweep (default: the number of cores)
      --no-determinism-check
                          run each seed once
      --variant NAME      run a deliberately broken variant, to see a checker catch it:
                          \(BrokenVariant.allCases.map(\.rawValue).joined(separator: ", "))
    """

let compareHelp = """
    converge-sim compare [SCENARIO.json] --policies A,B,... [--seeds A..<B] [--json] [overrides]

    Runs the same seeds (the same histories) under each policy and prints a table of their
    metrics: lost updates, conflicts, convergence, traffic, metadata.
    """

let replayHelp = """
    converge-sim replay TRACE [--json]

    Re-runs a recorded trace without the seed's generator (every operation, fault and
    network decision comes from the trace) and checks that the report matches the one
    recorded. Exit code 1 if a checker fails or the replay differs.
    """

let shrinkHelp = """
    converge-sim shrink TRACE [--output FILE]

    Reduces a failing trace (operations, faults and network decisions) to a small trace
    that still fails, and writes it (default: TRACE with .shrunk.jsonl).
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("converge-sim: \(message)\nRun `converge-sim --help` for usage.\n".utf8))
    exit(2)
}

func printLine(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

func readText(_ path: String) throws(UsageError) -> String {
    guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
        throw UsageError("cannot read \(path)")
    }
    return text
}

func reproduceCommand(_ arguments: RunArguments, seed: UInt64) -> String {
    (["swift", "run", "converge-sim", "run"] + arguments.commandPrefix + ["--seed", String(seed), "--trace", "failure-\(seed).jsonl"])
        .joined(separator: " ") + "   # then: swift run converge-sim shrink failure-\(seed).jsonl"
}

func runCommand(_ arguments: RunArguments) throws(UsageError) -> Int32 {
    let scenario = try arguments.scenario()
    var inputs: [UInt64: SimulationInput] = [:]
    for seed in arguments.seeds.prefix(1) {
        // Resolve one up front, so a bad scenario is a usage error before any run.
        do { inputs[seed] = try SimulationInput(scenario: scenario, seed: seed, variant: arguments.variant) } catch {
            throw UsageError(error.message)
        }
    }
    let started = ContinuousClock.now
    let variant = arguments.variant, check = arguments.checkDeterminism
    let results = SimulationRunner.sweep(seeds: arguments.seeds, jobs: arguments.jobs) { seed in
        // The scenario was validated above; resolving cannot fail for another seed.
        var input = try! SimulationInput(scenario: scenario, seed: seed, variant: variant)
        if variant == .nondeterministic { input.ambientJitter = { Int.random(in: 0...3) } }
        return (input, SimulationRunner.run(input, checkDeterminism: check))
    }
    let elapsed = ContinuousClock.now - started
    for (input, result) in results {
        let reproduce = reproduceCommand(arguments, seed: result.seed)
        if arguments.json {
            printLine(Report.jsonLine(result, reproduce: reproduce))
        } else {
            printLine(Report.text(result, reproduce: reproduce, fullOptions: arguments.singleSeed))
        }
        if let path = arguments.tracePath {
            let text = Trace.text(input: input, result: result)
            guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else { throw UsageError("cannot write \(path)") }
            if !arguments.json { printLine("  trace written to \(path)") }
        }
    }
    let failed = results.filter { !$0.1.passed }.map(\.1.seed)
    if !arguments.json {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        printLine("\(results.count) run\(results.count == 1 ? "" : "s") of scenario \"\(scenario.name)\": \(results.count - failed.count) passed, \(failed.count) failed"
                  + (failed.isEmpty ? "" : " (seeds \(failed.prefix(20).map(String.init).joined(separator: ", ")))")
                  + String(format: " in %.2f s on %d thread%@", seconds, min(arguments.jobs, results.count), arguments.jobs == 1 ? "" : "s"))
        if let first = failed.first { printLine("reproduce the first failure: \(reproduceCommand(arguments, seed: first))") }
    }
    return failed.isEmpty ? 0 : 1
}

func compareCommand(_ arguments: RunArguments) throws(UsageError) -> Int32 {
    let base = try arguments.scenario()
    var rows: [(policy: String, results: [SimulationResult])] = []
    var anyFailed = false
    for policy in arguments.policies {
        var withPolicy = base
        do { try withPolicy.set("policy", .string(policy)) } catch { throw UsageError(error.message) }
        do { _ = try withPolicy.resolved(seed: arguments.seeds[0]) } catch { throw UsageError(error.message) }
        let scenario = withPolicy
        let variant = arguments.variant, check = arguments.checkDeterminism
        let results = SimulationRunner.sweep(seeds: arguments.seeds, jobs: arguments.jobs) { seed in
            SimulationRunner.run(try! SimulationInput(scenario: scenario, seed: seed, variant: variant), checkDeterminism: check)
        }
        for result in results where !result.passed { anyFailed = true }
        if arguments.json {
            var again = arguments
            again.overrides.append(("policy", policy))
            for result in results { printLine(Report.jsonLine(result, reproduce: reproduceCommand(again, seed: result.seed), policy: policy)) }
        }
        rows.append((policy, results))
    }
    guard !arguments.json else { return anyFailed ? 1 : 0 }
    func total(_ results: [SimulationResult], _ group: String, _ name: String) -> Int64 {
        results.reduce(0) { $0 + ($1.metrics[group]?[name]?.intValue ?? 0) }
    }
    func median(_ values: [Double]) -> String {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return "-" }
        return JSON.double(sorted[sorted.count / 2]).serialized()
    }
    printLine("policies compared on scenario \"\(base.name)\", seeds \(arguments.seeds.first!)..<\(arguments.seeds.last! + 1) (the same histories for every policy)")
    let header = ["policy", "runs", "passed", "conflicts", "lost updates", "hid the later write", "p50 propagation ms", "liveness ms", "messages", "bytes", "metadata B/key"]
    var table = [header]
    for (policy, results) in rows {
        table.append([
            policy, String(results.count), String(results.filter(\.passed).count),
            Report.grouped(total(results, "policy", "conflictsResolvedByWrites")),
            Report.grouped(total(results, "policy", "lostUpdates")),
            Report.grouped(total(results, "policy", "lostUpdatesLaterInTrueTime")),
            median(results.compactMap { $0.metrics["convergence"]?["propagationMs"]?["p50"]?.doubleValue }),
            median(results.compactMap { $0.metrics["convergence"]?["livenessMs"]?.doubleValue }),
            Report.grouped(total(results, "network", "messages")),
            Report.grouped(total(results, "network", "bytes")),
            median(results.compactMap { $0.metrics["state"]?["metadataBytesPerKey"]?.doubleValue }),
        ])
    }
    let widths = header.indices.map { column in table.map { $0[column].count }.max()! }
    for row in table {
        printLine(row.enumerated().map { column, cell in
            column == 0 ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                : String(repeating: " ", count: widths[column] - cell.count) + cell
        }.joined(separator: "  "))
    }
    for (policy, results) in rows {
        for result in results where !result.passed {
            var again = arguments
            again.overrides.append(("policy", policy))
            printLine("FAIL \(policy) seed \(result.seed): \(result.violations.first!)")
            printLine("  reproduce: \(reproduceCommand(again, seed: result.seed))")
        }
    }
    return anyFailed ? 1 : 0
}

func replayCommand(_ arguments: [String]) throws(UsageError) -> Int32 {
    var path: String?
    var json = false
    for argument in arguments {
        if argument == "--json" { json = true } else if argument.hasPrefix("-") { throw UsageError("unknown option \(argument) for replay") }
        else if path == nil { path = argument } else { throw UsageError("replay takes one trace") }
    }
    guard let path else { throw UsageError("replay needs a TRACE file") }
    let trace: ParsedTrace
    let text = try readText(path)
    do { trace = try ParsedTrace(text: text) } catch { throw UsageError("\(path): \(error.message)") }
    var result = SimulationRunner.run(trace.input)
    if let recorded = trace.recordedDigest, recorded != result.digest {
        result.violations.append("replay: the digest \(result.digest) differs from the recorded \(recorded)")
    }
    let reproduce = "swift run converge-sim replay \(path)"
    printLine(json ? Report.jsonLine(result, reproduce: reproduce) : Report.text(result, reproduce: reproduce, fullOptions: true))
    if !json, trace.recordedDigest == result.digest { printLine("  replay matches the recorded digest") }
    return result.passed ? 0 : 1
}

func shrinkCommand(_ arguments: [String]) throws(UsageError) -> Int32 {
    var path: String?
    var output: String?
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        if argument == "--output" {
            index += 1
            guard index < arguments.count else { throw UsageError("--output needs a file") }
            output = arguments[index]
        } else if argument.hasPrefix("-") { throw UsageError("unknown option \(argument) for shrink") }
        else if path == nil { path = argument } else { throw UsageError("shrink takes one trace") }
        index += 1
    }
    guard let path else { throw UsageError("shrink needs a TRACE file") }
    let trace: ParsedTrace
    let text = try readText(path)
    do { trace = try ParsedTrace(text: text) } catch { throw UsageError("\(path): \(error.message)") }
    let original = SimulationRunner.run(trace.input, checkDeterminism: false)
    guard !original.passed else {
        printLine("the trace passes every checker: nothing to shrink")
        return 0
    }
    let events = trace.input.plan.count
    let (shrunk, runs) = Shrinker().shrink(trace.input) { !SimulationRunner.run($0, checkDeterminism: false).passed }
    let result = SimulationRunner.run(shrunk, checkDeterminism: false)
    let destination = output ?? (path.hasSuffix(".jsonl") ? String(path.dropLast(6)) : path) + ".shrunk.jsonl"
    guard FileManager.default.createFile(atPath: destination, contents: Data(Trace.text(input: shrunk, result: result).utf8)) else {
        throw UsageError("cannot write \(destination)")
    }
    let faults = (shrunk.recordedFates ?? [:]).values.filter { $0.delaysMs.count != 1 }.count
    printLine("shrunk \(events) planned events to \(shrunk.plan.count) (and \(faults) network faults) in \(runs) runs")
    for timed in shrunk.plan { printLine("  \(timed.timeMs) ms: \(timed.event)") }
    for violation in result.violations { printLine("  still fails: \(violation)") }
    printLine("written to \(destination); reproduce: swift run converge-sim replay \(destination)")
    return 1
}

func optionsCommand() -> Int32 {
    for spec in SimulationOptionTable.specs {
        let fallback: String
        switch spec.defaultValue {
        case .fixed(let value): fallback = "default \(value.serialized())"
        case .swarmInteger(let range): fallback = "from the seed in \(range.lowerBound)...\(range.upperBound)"
        case .swarmNumber(let range): fallback = "from the seed in \(range.lowerBound)...\(range.upperBound)"
        case .swarmChoice(let choices): fallback = "from the seed among \(choices.joined(separator: ", "))"
        }
        printLine("\(spec.name.padding(toLength: 20, withPad: " ", startingAt: 0)) \(spec.summary); \(fallback)")
    }
    return 0
}

var arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.first.map { $0.hasPrefix("-") ? "run" : $0 } ?? "run"
if let first = arguments.first, !first.hasPrefix("-") { arguments.removeFirst() }
if arguments.first == "--help" || arguments.first == "-h" || command == "help" {
    switch command {
    case "run" where CommandLine.arguments.count > 2: printLine(runHelp)
    case "compare": printLine(compareHelp)
    case "replay": printLine(replayHelp)
    case "shrink": printLine(shrinkHelp)
    default: printLine(generalHelp)
    }
    exit(0)
}
do {
    let code: Int32
    switch command {
    case "run": code = try runCommand(try RunArguments.parse(arguments, command: "run"))
    case "compare": code = try compareCommand(try RunArguments.parse(arguments, command: "compare"))
    case "replay": code = try replayCommand(arguments)
    case "shrink": code = try shrinkCommand(arguments)
    case "options": code = optionsCommand()
    default: throw UsageError("unknown command \"\(command)\"")
    }
    exit(code)
} catch let error as UsageError {
    fail(error.message)
} catch {
    fail("\(error)")
}
