import ConvergeSimulation
import Foundation

/// Bad usage: printed with a hint, exit code 2.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// The options shared by `run` and `compare`.
struct RunArguments {
    var scenarioPath: String?
    var seeds: [UInt64] = Array(0..<5)
    var singleSeed = false
    var overrides: [(String, String)] = []
    var tracePath: String?
    var json = false
    var jobs = SimulationRunner.availableCores
    var variant: BrokenVariant?
    var checkDeterminism = true
    var policies: [String] = []

    /// The options as they would be typed again (for reproduce commands), without seeds.
    var commandPrefix: [String] {
        var words: [String] = []
        if let scenarioPath { words.append(scenarioPath) }
        for (name, value) in overrides { words += ["--\(name)", value] }
        if let variant { words += ["--variant", variant.rawValue] }
        return words
    }

    static let overrideFlags: [String: String] = [
        "--devices": "devices", "--operations": "operations", "--policy": "policy", "--topology": "topology",
        "--loss": "loss", "--duplicate": "duplicate",
    ]

    static func parse(_ arguments: [String], command: String) throws(UsageError) -> RunArguments {
        var parsed = RunArguments()
        var index = 0
        func value(_ flag: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw UsageError("\(flag) needs a value") }
            return arguments[index]
        }
        var sawSeed = false, sawSeeds = false
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--seed":
                let text = try value(argument)
                guard let seed = UInt64(text) else { throw UsageError("--seed needs an unsigned integer, not \"\(text)\"") }
                parsed.seeds = [seed]
                parsed.singleSeed = true
                sawSeed = true
            case "--seeds":
                parsed.seeds = try parseRange(try value(argument))
                sawSeeds = true
            case "--trace": parsed.tracePath = try value(argument)
            case "--json": parsed.json = true
            case "--jobs":
                let text = try value(argument)
                guard let jobs = Int(text), jobs >= 1, jobs <= 1_024 else { throw UsageError("--jobs needs an integer in 1...1024, not \"\(text)\"") }
                parsed.jobs = jobs
            case "--variant":
                let text = try value(argument)
                guard let variant = BrokenVariant(rawValue: text) else {
                    throw UsageError("unknown variant \"\(text)\"; variants: \(BrokenVariant.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                parsed.variant = variant
            case "--no-determinism-check": parsed.checkDeterminism = false
            case "--policies" where command == "compare":
                parsed.policies = try value(argument).split(separator: ",").map(String.init)
                guard !parsed.policies.isEmpty else { throw UsageError("--policies needs a comma-separated list") }
                for policy in parsed.policies where !PolicyName.all.contains(policy) {
                    throw UsageError("unknown policy \"\(policy)\"; policies: \(PolicyName.all.joined(separator: ", "))")
                }
            default:
                if let name = overrideFlags[argument], !(command == "compare" && name == "policy") {
                    parsed.overrides.append((name, try value(argument)))
                } else if argument.hasPrefix("-") {
                    throw UsageError("unknown option \(argument) for \(command)")
                } else if parsed.scenarioPath == nil {
                    parsed.scenarioPath = argument
                } else {
                    throw UsageError("unexpected argument \"\(argument)\" (one scenario file at most)")
                }
            }
            index += 1
        }
        if sawSeed && sawSeeds { throw UsageError("give --seed or --seeds, not both") }
        if parsed.tracePath != nil && parsed.seeds.count != 1 { throw UsageError("--trace records one run: give it with --seed N") }
        if command == "compare" && parsed.policies.isEmpty { throw UsageError("compare needs --policies A,B,...") }
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
            guard let data = FileManager.default.contents(atPath: scenarioPath) else {
                throw UsageError("cannot read scenario file \(scenarioPath)")
            }
            guard let text = String(data: data, encoding: .utf8) else { throw UsageError("\(scenarioPath): not UTF-8 text") }
            do { scenario = try Scenario(json: text, fileName: scenarioPath) } catch { throw UsageError(error.message) }
        }
        for (name, text) in overrides {
            let value: JSON = Int64(text).map(JSON.int) ?? Double(text).map(JSON.double) ?? .string(text)
            do { try scenario.set(name, value) } catch { throw UsageError("--\(name): \(error.message)") }
        }
        return scenario
    }
}
