import Converge
import ConvergeSimulation
import Foundation

/// `converge-sim sweep`: every scenario of the catalogue under every policy and every
/// topology it does not fix itself, over a range of seeds each: what CI runs in release.
enum SweepCommand: Subcommand {
    static let name = "sweep"

    struct Arguments {
        var directory = "Simulations"
        var seedsPerCombination = 45
        var firstSeed: UInt64 = 0
        var jobs = SimulationRunner.availableCores
        var checkDeterminism = true
    }

    static let flags: [Flag<Arguments>] = [
        Flag(name: "--scenarios", value: "DIR", help: "the catalogue's directory (default Simulations)") { arguments, text throws(UsageError) in
            arguments.directory = text
        },
        Flag(name: "--seeds-per-combination", value: "N",
             help: "seeds of each scenario, policy and topology (default 45; a tenth for 16 devices or more, a third for the folder topology of a scenario not about it)") { arguments, text throws(UsageError) in
            guard let count = Int(text), count >= 1 else { throw UsageError("--seeds-per-combination takes a positive integer, not \(text)") }
            arguments.seedsPerCombination = count
        },
        Flag(name: "--first-seed", value: "N", help: "the first seed of every range (default 0)") { arguments, text throws(UsageError) in
            guard let seed = UInt64(text) else { throw UsageError("--first-seed takes a seed, not \(text)") }
            arguments.firstSeed = seed
        },
        Flag(name: "--jobs", value: "N", help: "threads (default: every core)") { arguments, text throws(UsageError) in
            guard let jobs = Int(text), jobs >= 1 else { throw UsageError("--jobs takes a positive integer, not \(text)") }
            arguments.jobs = jobs
        },
        Flag(name: "--no-determinism-check", value: nil, help: "run each seed once, not twice") { arguments, _ throws(UsageError) in
            arguments.checkDeterminism = false
        },
    ]

    static var synopsis: String { Flag.synopsis(name, [], flags: flags) }

    static var help: String {
        """
        \(synopsis)

        Runs every scenario of the catalogue (every .json file of the directory) under every
        policy, and under each topology (hub, mesh, folder) unless the scenario sets its
        topology: the same seeds for each combination, each run checked by every checker
        (and twice, for determinism). Prints a line per combination and the total; the exit
        code is 1 if any run failed, with the command that reproduces it.

        """ + Flag.helpLines(flags).joined(separator: "\n")
    }

    /// One scenario file under one policy and topology, with its seeds.
    struct Combination: Sendable {
        var file: String
        var scenario: Scenario
        var policy: PolicyName
        var topology: SyncTopology
        var seeds: [UInt64]

        var label: String { "\((file as NSString).lastPathComponent) --policy \(policy.rawValue) --topology \(topology.rawValue)" }
    }

    static func run(_ words: [String]) throws(UsageError) -> Int32 {
        var arguments = Arguments()
        try Flag.parse(words, flags: flags, command: name, into: &arguments) { _, word throws(UsageError) in
            throw UsageError("sweep takes no scenario file (it runs the catalogue's); unexpected \(word)")
        }
        let combinations = try plan(arguments)
        let started = ContinuousClock.now
        var total = 0, failedRuns = 0
        for combination in combinations {
            let check = arguments.checkDeterminism
            let results = SimulationRunner.sweep(seeds: combination.seeds, jobs: arguments.jobs) { seed in
                // Each combination was resolved once in `plan`; another seed cannot fail to resolve.
                SimulationRunner.run(try! SimulationInput(scenario: combination.scenario, seed: seed), checkDeterminism: check)
            }
            let failed = results.filter { !$0.passed }
            total += results.count
            failedRuns += failed.count
            var line = "\(combination.label): \(results.count - failed.count) of \(results.count) passed"
            if let first = failed.first {
                let kinds = Set(failed.flatMap { $0.violations.map(\.kind.rawValue) }).sorted().joined(separator: ", ")
                line += " (failed: seeds \(failed.prefix(10).map { String($0.seed) }.joined(separator: ", ")); \(kinds))"
                line += "\n  reproduce: swift run converge-sim run \(combination.file) --policy \(combination.policy.rawValue)"
                    + " --topology \(combination.topology.rawValue) --seed \(first.seed)"
            }
            printLine(line)
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        printLine(String(format: "sweep: %d runs of %d combinations, %d failed, in %.1f s on %d threads",
                         total, combinations.count, failedRuns, seconds, arguments.jobs))
        return failedRuns == 0 ? 0 : 1
    }

    /// Every combination of the catalogue, in file, policy and topology order.
    static func plan(_ arguments: Arguments) throws(UsageError) -> [Combination] {
        let directory = arguments.directory
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }
                .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        } catch {
            throw UsageError("cannot list the scenarios of \(directory): \(error.localizedDescription)")
        }
        guard !names.isEmpty else { throw UsageError("no scenario (.json file) in \(directory)") }
        var combinations: [Combination] = []
        for name in names {
            let path = (directory as NSString).appendingPathComponent(name)
            let base: Scenario
            do { base = try Scenario(json: try readText(path), fileName: name) } catch let error as ScenarioError {
                throw UsageError(error.message)
            } catch let error as UsageError { throw error } catch { throw UsageError("\(error)") }
            let options: SimulationOptions
            do { options = try base.resolved(seed: arguments.firstSeed) } catch { throw UsageError("\(name): \(error.message)") }
            // A scenario that fixes its topology is about that topology; the others run in both.
            let topologies: [SyncTopology] = base.given["topology"] != nil ? [options.topology] : SyncTopology.allCases
            // Large scenarios (a twenty-device mesh) cost ten times a small one per seed.
            let count = options.devices >= 16 ? max(2, arguments.seedsPerCombination / 10) : arguments.seedsPerCombination
            for policy in PolicyName.allCases {
                for topology in topologies {
                    // A folder run costs about three hub runs per seed (every sync re-reads each
                    // replica's snapshot): a third of the seeds, unless the scenario is about it.
                    let scaled = topology == .folder && topologies.count > 1 ? max(2, count / 3) : count
                    let seeds = (0..<UInt64(scaled)).map { arguments.firstSeed + $0 }
                    var scenario = base
                    do {
                        try scenario.set(\.policy, to: policy)
                        try scenario.set(\.topology, to: topology)
                        _ = try scenario.resolved(seed: arguments.firstSeed)
                    } catch {
                        throw UsageError("\(name): \(error.message)")
                    }
                    combinations.append(Combination(file: path, scenario: scenario, policy: policy, topology: topology, seeds: seeds))
                }
            }
        }
        return combinations
    }
}
