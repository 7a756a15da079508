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

    static let csvFlag = Flag<RunArguments>(
        name: "--csv", value: nil, help: "one CSV row per policy and seed, with a header (for plotting)"
    ) { arguments, _ throws(UsageError) in arguments.csv = true }

    static let htmlFlag = Flag<RunArguments>(
        name: "--html", value: "OUT.html", help: "also write the means and intervals as SVG charts in one HTML page"
    ) { arguments, value throws(UsageError) in arguments.html = value }

    static var ownFlags: [Flag<RunArguments>] { [policiesFlag, csvFlag, htmlFlag] + RunArguments.runFlags.filter { $0.name != "--trace" } }
    static var flags: [Flag<RunArguments>] { ownFlags + RunArguments.overrideFlags(excluding: ["policy"]) }

    static var help: String {
        """
        \(synopsis)

        Runs the same seeds (the same histories) under each policy and prints, per policy, the
        mean of each metric over the seeds with its 95% confidence interval, then each policy's
        difference from the first one, paired on the same seeds. "hidden updates" are live
        concurrent values a policy did not show before a write replaced them (nothing is lost:
        every write is kept until then, and conflicts are reported); "value-remove conflicts"
        are writes that replaced a value and a concurrent removal (add-wins and remove-wins
        differ there). --csv prints one row per policy and seed instead; --html also writes
        the figures as charts (one per metric, a bar per policy with its interval) in one
        self-contained page.
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
        if let html = arguments.html {
            try writeText(PolicyCharts.html(rows, scenario: base.name, seeds: arguments.seeds), to: html)
            if !arguments.json && !arguments.csv { printLine("charts written to \(html)") }
        }
        guard !arguments.json else { return anyFailed ? 1 : 0 }
        if arguments.csv {
            printCSV(rows)
            return anyFailed ? 1 : 0
        }
        printTable(rows, scenario: base.name, seeds: arguments.seeds)
        for (policy, results) in rows {
            for result in results where !result.passed {
                printLine("FAIL \(policy.rawValue) seed \(result.seed): \(result.violations.first.map(String.init(describing:)) ?? "")")
                printLine("  reproduce: \(arguments.with(policy: policy).reproduceCommand(seed: result.seed))")
            }
        }
        return anyFailed ? 1 : 0
    }

    /// The means with their confidence intervals, then the paired differences from the
    /// first policy.
    static func printTable(_ rows: [(policy: PolicyName, results: [SimulationResult])], scenario: String, seeds: [UInt64]) {
        printLine("policies compared on scenario \"\(scenario)\", seeds \(seeds.first!)..<\(seeds.last! + 1) "
                  + "(the same histories for every policy): mean per run ± 95% confidence interval")
        let metrics = PolicyMetric.all
        var table = [["policy", "passed"] + metrics.map(\.name)]
        for (policy, results) in rows {
            table.append([policy.rawValue, "\(results.filter(\.passed).count)/\(results.count)"]
                         + metrics.map { metric in MeanInterval(results.compactMap { metric.value($0.metrics) })?.text ?? "-" })
        }
        printAligned(table)
        guard rows.count > 1 else { return }
        let baseline = rows[0]
        printLine("")
        printLine("difference from \(baseline.policy.rawValue), paired on each seed: mean ± 95% confidence interval")
        var differences = [["policy"] + metrics.map(\.name)]
        for (policy, results) in rows.dropFirst() {
            differences.append([policy.rawValue] + metrics.map { metric in
                MeanInterval(pairedDifferences: bySeed(baseline.results, metric), bySeed(results, metric))?.text ?? "-"
            })
        }
        printAligned(differences)
    }

    /// One row per policy and seed, every metric a column (empty where it does not apply).
    static func printCSV(_ rows: [(policy: PolicyName, results: [SimulationResult])]) {
        let metrics = PolicyMetric.all
        printLine((["policy", "seed", "passed"] + metrics.map(\.csvName)).joined(separator: ","))
        for (policy, results) in rows {
            for result in results {
                let cells = metrics.map { metric in
                    metric.value(result.metrics).map { $0 == $0.rounded() && abs($0) < 1e15 ? String(Int64($0)) : String($0) } ?? ""
                }
                printLine(([policy.rawValue, String(result.seed), result.passed ? "1" : "0"] + cells).joined(separator: ","))
            }
        }
    }

    static func bySeed(_ results: [SimulationResult], _ metric: PolicyMetric) -> [UInt64: Double] {
        var values: [UInt64: Double] = [:]
        for result in results { values[result.seed] = metric.value(result.metrics) }
        return values
    }

    static func printAligned(_ table: [[String]]) {
        let widths = table[0].indices.map { column in table.map { $0[column].count }.max()! }
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
