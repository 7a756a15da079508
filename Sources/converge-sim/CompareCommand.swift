import ConvergeSimulation

/// `converge-sim compare`: the same seeds (the same histories) under several policies.
enum CompareCommand: Subcommand {
    static let name = "compare"
    static var synopsis: String { Flag.synopsis(name, ["[SCENARIO.json]"], flags: RunArguments.synopsisFlags(flags)) }

    static let policiesFlag = Flag<RunArguments>(
        name: "--policies", value: "A,B,...", help: "the policies to compare: " + PolicyName.allCases.map(\.rawValue).joined(separator: ", "),
        required: true
    ) { arguments, text throws(UsageError) in
        let names = text.split(separator: ",").map(String.init)
        guard !names.isEmpty else { throw UsageError("--policies needs a comma-separated list") }
        arguments.policies = []
        for name in names {
            guard let policy = PolicyName(rawValue: name) else {
                throw UsageError("unknown policy \"\(name)\"; policies: \(PolicyName.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            arguments.policies.append(policy)
        }
    }

    static var ownFlags: [Flag<RunArguments>] { [policiesFlag] + RunArguments.runFlags.filter { $0.name != "--trace" } }
    static var flags: [Flag<RunArguments>] { ownFlags + RunArguments.overrideFlags(excluding: ["policy"]) }

    static var help: String {
        """
        \(synopsis)

        Runs the same seeds (the same histories) under each policy and prints a table of their
        metrics: lost updates, conflicts, convergence, traffic, metadata.
        """ + "\n\n" + (Flag.helpLines(ownFlags) + ["", "Options of the scenario, overridden:"] + RunArguments.overrideHelp(excluding: ["policy"]))
            .joined(separator: "\n")
    }

    static func run(_ words: [String]) throws(UsageError) -> Int32 {
        let arguments = try RunArguments.parse(words, command: name, flags: flags)
        guard !arguments.policies.isEmpty else { throw UsageError("compare needs --policies A,B,...") }
        let base = try arguments.scenario()
        var rows: [(policy: PolicyName, results: [SimulationResult])] = []
        var anyFailed = false
        for policy in arguments.policies {
            var withPolicy = base
            do {
                try withPolicy.set(\.policy, to: policy)
                _ = try withPolicy.resolved(seed: arguments.seeds[0])
            } catch {
                throw UsageError(error.message)
            }
            let scenario = withPolicy
            let variant = arguments.variant, check = arguments.checkDeterminism
            let results = SimulationRunner.sweep(seeds: arguments.seeds, jobs: arguments.jobs) { seed in
                SimulationRunner.run(try! SimulationInput(scenario: scenario, seed: seed, variant: variant), checkDeterminism: check)
            }
            anyFailed = anyFailed || results.contains { !$0.passed }
            if arguments.json {
                let again = arguments.with(policy: policy)
                for result in results {
                    printLine(Report.jsonLine(result, reproduce: again.reproduceCommand(seed: result.seed), policy: policy.rawValue))
                }
            }
            rows.append((policy, results))
        }
        guard !arguments.json else { return anyFailed ? 1 : 0 }
        printTable(rows, scenario: base.name, seeds: arguments.seeds)
        for (policy, results) in rows {
            for result in results where !result.passed {
                printLine("FAIL \(policy.rawValue) seed \(result.seed): \(result.violations.first.map(String.init(describing:)) ?? "")")
                printLine("  reproduce: \(arguments.with(policy: policy).reproduceCommand(seed: result.seed))")
            }
        }
        return anyFailed ? 1 : 0
    }

    static func printTable(_ rows: [(policy: PolicyName, results: [SimulationResult])], scenario: String, seeds: [UInt64]) {
        func total(_ results: [SimulationResult], _ value: (SimulationMetrics) -> Int) -> String {
            Report.grouped(results.reduce(0) { $0 + value($1.metrics) })
        }
        func median(_ results: [SimulationResult], _ value: (SimulationMetrics) -> Double?) -> String {
            let sorted = results.compactMap { value($0.metrics) }.sorted()
            return sorted.isEmpty ? "-" : Report.decimal(sorted[sorted.count / 2])
        }
        printLine("policies compared on scenario \"\(scenario)\", seeds \(seeds.first!)..<\(seeds.last! + 1) (the same histories for every policy)")
        let header = ["policy", "runs", "passed", "conflicts", "lost updates", "hid the later write", "p50 propagation ms", "liveness ms",
                      "messages", "bytes", "metadata B/key"]
        var table = [header]
        for (policy, results) in rows {
            table.append([
                policy.rawValue, String(results.count), String(results.filter(\.passed).count),
                total(results) { $0.policy.conflictsResolvedByWrites },
                total(results) { $0.policy.lostUpdates },
                total(results) { $0.policy.lostUpdatesLaterInTrueTime },
                median(results) { $0.convergence.propagationMs.p50.map(Double.init) },
                median(results) { $0.convergence.livenessMs.map(Double.init) },
                total(results) { $0.network.messages },
                total(results) { $0.network.bytes },
                median(results) { $0.state.metadataBytesPerKey },
            ])
        }
        let widths = header.indices.map { column in table.map { $0[column].count }.max()! }
        for row in table {
            printLine(row.enumerated().map { column, cell in
                column == 0 ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }.joined(separator: "  "))
        }
    }
}

extension RunArguments {
    /// The same arguments with `--policy` set (for a compare's reproduce commands).
    func with(policy: PolicyName) -> RunArguments {
        var again = self
        again.overrides.append(("policy", policy.rawValue))
        return again
    }
}
