import ConvergeSimulation
import Foundation

/// The arguments `run` and `compare` share: a scenario, seeds, overrides of its options,
/// and how to report.
struct RunArguments {
    var scenarioPath: String?
    var seeds: [UInt64] = Array(0..<5)
    var sawSeed = false, sawSeeds = false
    /// Options set on the command line, in the order given.
    var overrides: [(name: String, value: String)] = []
    var tracePath: String?
    var json = false
    /// Print only the failing runs and the summary (`--quiet`).
    var quiet = false
    var jobs = SimulationRunner.availableCores
    var variant: BrokenVariant?
    var checkDeterminism = true
    var policies: [PolicyName] = []
    /// `compare --csv`: one row per policy and seed.
    var csv = false
    /// `compare --html OUT.html`: the charts' page.
    var html: String?

    /// Whether one seed is run (its report prints every option).
    var singleSeed: Bool { sawSeed }

    /// The options as they would be typed again (for reproduce commands), without seeds.
    var commandPrefix: [String] {
        var words: [String] = []
        if let scenarioPath { words.append(scenarioPath) }
        for (name, value) in overrides { words += ["--\(name)", value] }
        if let variant { words += ["--variant", variant.rawValue] }
        return words
    }

    /// The command that reproduces the run of `seed`.
    func reproduceCommand(seed: UInt64) -> String {
        (["swift", "run", "converge-sim", "run"] + commandPrefix + ["--seed", String(seed), "--trace", "failure-\(seed).jsonl"])
            .joined(separator: " ") + "   # then: swift run converge-sim shrink failure-\(seed).jsonl"
    }

    // MARK: The flags

    /// The options of a scenario most often overridden, listed one by one in help; every
    /// other option of the table is accepted too.
    static let commonOverrides = ["devices", "operations", "policy", "topology", "loss", "duplicate"]

    /// Seeds, trace, output, threads, variant: the flags of `run`.
    static let runFlags: [Flag<RunArguments>] = [
        Flag(name: "--seed", value: "N", help: "one seed (prints every option)") { arguments, text throws(UsageError) in
            guard let seed = UInt64(text) else { throw UsageError("--seed needs an unsigned integer, not \"\(text)\"") }
            arguments.seeds = [seed]
            arguments.sawSeed = true
        },
        Flag(name: "--seeds", value: "A..<B", help: "a sweep (default 0..<5), across all cores; quote it in a shell") {
            arguments, text throws(UsageError) in
            arguments.seeds = try parseRange(text)
            arguments.sawSeeds = true
        },
        Flag(name: "--trace", value: "FILE", help: "write the run's trace (JSON Lines; needs --seed)") { arguments, text in
            arguments.tracePath = text
        },
        Flag(name: "--json", value: nil, help: "one JSON object per run per line") { arguments, _ in arguments.json = true },
        Flag(name: "--quiet", value: nil, help: "print only the failing runs and the summary") { arguments, _ in arguments.quiet = true },
        Flag(name: "--jobs", value: "N", help: "threads for a sweep (default: the number of cores)") { arguments, text throws(UsageError) in
            guard let jobs = Int(text), jobs >= 1, jobs <= 1_024 else { throw UsageError("--jobs needs an integer in 1...1024, not \"\(text)\"") }
            arguments.jobs = jobs
        },
        Flag(name: "--no-determinism-check", value: nil, help: "run each seed once") { arguments, _ in arguments.checkDeterminism = false },
        Flag(name: "--variant", value: "NAME",
             help: "run a deliberately broken variant, to see a checker catch it: "
                + BrokenVariant.allCases.map(\.rawValue).joined(separator: ", ")) { arguments, text throws(UsageError) in
            guard let variant = BrokenVariant(rawValue: text) else {
                throw UsageError("unknown variant \"\(text)\"; variants: \(BrokenVariant.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            arguments.variant = variant
        },
    ]

    /// `--NAME VALUE` for every option of the scenario table (but `exclude`), checked when
    /// the scenario is built.
    static func overrideFlags(excluding exclude: Set<String> = []) -> [Flag<RunArguments>] {
        SimulationOptionTable.specs.filter { !exclude.contains($0.name) }.map { spec in
            Flag(name: "--\(spec.name)", value: spec.placeholder, help: "\(spec.summary): \(spec.expectation)") { arguments, text in
                arguments.overrides.append((spec.name, text))
            }
        }
    }

    /// Help for the override flags: the common ones, then a line for the others.
    static func overrideHelp(excluding exclude: Set<String> = []) -> [String] {
        let flags = overrideFlags(excluding: exclude)
        let common = commonOverrides.compactMap { name in flags.first { $0.name == "--\(name)" } }
        return Flag.helpLines(common) + ["  --NAME VALUE              any other option of the scenario (`converge-sim options` lists them)"]
    }

    /// The flags a synopsis shows: seeds, the common overrides, the rest of `flags`.
    static func synopsisFlags(_ flags: [Flag<RunArguments>]) -> [Flag<RunArguments>] {
        let overrides = Set(SimulationOptionTable.specs.map { "--\($0.name)" })
        let common = commonOverrides.compactMap { name in flags.first { $0.name == "--\(name)" } }
        return flags.filter { !overrides.contains($0.name) } + common
    }

    /// Parses the arguments of `command` with `flags`; at most one scenario file.
    static func parse(_ arguments: [String], command: String, flags: [Flag<RunArguments>]) throws(UsageError) -> RunArguments {
        var parsed = RunArguments()
        try Flag.parse(arguments, flags: flags, command: command, into: &parsed) { parsed, word throws(UsageError) in
            guard parsed.scenarioPath == nil else { throw UsageError("unexpected argument \"\(word)\" (one scenario file at most)") }
            parsed.scenarioPath = word
        }
        if parsed.sawSeed && parsed.sawSeeds { throw UsageError("give --seed or --seeds, not both") }
        if parsed.tracePath != nil && parsed.seeds.count != 1 { throw UsageError("--trace records one run: give it with --seed N") }
        return parsed
    }

    /// `A..<B` (or `A..B`, inclusive).
    static func parseRange(_ text: String) throws(UsageError) -> [UInt64] {
        let bad = UsageError("--seeds needs a range A..<B (or A..B) of unsigned integers, not \"\(text)\"")
        let halfOpen = text.contains("..<")
        let parts = text.components(separatedBy: halfOpen ? "..<" : "..")
        guard parts.count == 2, let low = UInt64(parts[0]), let high = UInt64(parts[1]) else { throw bad }
        guard halfOpen ? low < high : low <= high else { throw UsageError("--seeds range \(text) is empty") }
        let upper = halfOpen ? high : high + 1
        guard upper - low <= 10_000_000 else { throw UsageError("--seeds range \(text) has more than 10,000,000 seeds") }
        return Array(low..<upper)
    }

    /// The scenario with the command-line overrides applied.
    func scenario() throws(UsageError) -> Scenario {
        var scenario = Scenario.standard
        if let scenarioPath {
            guard FileManager.default.fileExists(atPath: scenarioPath) else { throw UsageError("cannot read scenario file \(scenarioPath)") }
            let text = try readText(scenarioPath)
            do { scenario = try Scenario(json: text, fileName: scenarioPath) } catch { throw UsageError(error.message) }
        }
        for (name, text) in overrides {
            do { try scenario.set(name, parsing: text) } catch { throw UsageError("--\(name): \(error.message)") }
        }
        return scenario
    }
}

extension OptionSpec {
    /// The placeholder of the option's value in help: `N`, `P`, `X`, or its choices.
    var placeholder: String {
        switch kind {
        case .integer: return "N"
        case .probability: return "P"
        case .number: return "X"
        case .choice(let choices): return choices.count <= 3 ? choices.joined(separator: "|") : "NAME"
        }
    }
}
