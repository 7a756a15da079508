import ConvergeSimulation
import Foundation

/// `converge-sim run`: a scenario over one seed or a sweep of seeds.
enum RunCommand: Subcommand {
    static let name = "run"
    static var synopsis: String { Flag.synopsis(name, ["[SCENARIO.json]"], flags: RunArguments.synopsisFlags(flags)) }

    static var flags: [Flag<RunArguments>] { RunArguments.runFlags + RunArguments.overrideFlags() }

    static var help: String {
        """
        \(synopsis)

        Runs a scenario (a JSON file of Simulations/, or the default one) for one seed or a
        range of seeds. Options the scenario leaves open are drawn from the seed and printed.
        Each run has a safety phase (faults on, invariants after every step) and a liveness
        phase (faults healed; replicas must converge). Every run is executed twice to check
        that it is deterministic.
        """ + "\n\n" + (Flag.helpLines(RunArguments.runFlags) + ["", "Options of the scenario, overridden:"] + RunArguments.overrideHelp())
            .joined(separator: "\n")
    }

    static func run(_ words: [String]) throws(UsageError) -> Int32 {
        try run(RunArguments.parse(words, command: name, flags: flags))
    }

    static func run(_ arguments: RunArguments) throws(UsageError) -> Int32 {
        let scenario = try arguments.scenario()
        // Resolve one up front, so a bad scenario is a usage error before any run.
        do { _ = try scenario.resolved(seed: arguments.seeds[0]) } catch { throw UsageError(error.message) }
        let started = ContinuousClock.now
        let variant = arguments.variant, check = arguments.checkDeterminism
        let progress = ProgressLine(total: arguments.seeds.count)
        let results = SimulationRunner.sweep(seeds: arguments.seeds, jobs: arguments.jobs) { seed in
            // The scenario was validated above; resolving cannot fail for another seed.
            var input = try! SimulationInput(scenario: scenario, seed: seed, variant: variant)
            if variant == .nondeterministic { input.ambientJitter = { Int.random(in: 0...3) } }
            let result = SimulationRunner.run(input, checkDeterminism: check)
            progress.advance(passed: result.passed)
            return (input, result)
        }
        progress.finish()
        let elapsed = ContinuousClock.now - started
        for (input, result) in results {
            let reproduce = arguments.reproduceCommand(seed: result.seed)
            let shown = !(arguments.quiet && result.passed)
            if shown && arguments.json {
                printLine(Report.jsonLine(result, reproduce: reproduce))
            } else if shown {
                printLine(Report.text(result, reproduce: reproduce, fullOptions: arguments.singleSeed))
            }
            if let path = arguments.tracePath {
                try writeText(Trace.text(input: input, result: result), to: path)
                if shown && !arguments.json { printLine("  trace written to \(path)") }
            }
        }
        let failed = results.filter { !$0.1.passed }.map(\.1.seed)
        if let variant {
            // A variant that cannot fire in a run proves nothing there: say so.
            let inert = results.compactMap { input, _ in variant.inertReason(in: input.options).map { (input.seed, $0) } }
            if let (_, reason) = inert.first {
                let seeds = inert.prefix(20).map { String($0.0) }.joined(separator: ", ")
                printError("note: --variant \(variant.rawValue) changes nothing in \(inert.count) of \(results.count) runs (seeds \(seeds)): \(reason)")
            }
        }
        if !arguments.json {
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let threads = min(arguments.jobs, results.count)
            printLine("\(results.count) run\(results.count == 1 ? "" : "s") of scenario \"\(scenario.name)\": "
                      + "\(results.count - failed.count) passed, \(failed.count) failed"
                      + (failed.isEmpty ? "" : " (seeds \(failed.prefix(20).map(String.init).joined(separator: ", ")))")
                      + String(format: " in %.2f s on %d thread%@", seconds, threads, threads == 1 ? "" : "s"))
            if let first = failed.first { printLine("reproduce the first failure: \(arguments.reproduceCommand(seed: first))") }
        }
        return failed.isEmpty ? 0 : 1
    }
}
