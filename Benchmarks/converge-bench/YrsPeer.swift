import Foundation

/// The Yrs side of the map workloads: Benchmarks/yrs/run.sh (which makes its own Python
/// virtual environment with pycrdt) run once, on first use, in a child process.
enum YrsPeer {
    enum Mode {
        /// Run it if `python3` is on the PATH; otherwise say so and print Converge's figures only.
        case automatic
        /// Run it, and fail (exit code 1) if it cannot run.
        case required
        /// Do not run it.
        case off
    }

    struct Unavailable: Error {
        var message: String
    }

    // Set once from the command line and filled on first use; benchmarks run on one thread.
    nonisolated(unsafe) static var mode = Mode.automatic
    nonisolated(unsafe) private static var results: Result<[String: MapWorkloads.Outcome], Unavailable>?

    /// The script, found from this source file's place in the package.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("yrs/run.sh").path

    /// Yrs's figures for workload `name`, or why there are none.
    static func outcome(_ name: String) -> Result<MapWorkloads.Outcome, Unavailable> {
        if results == nil {
            results = run()
            if case .failure(let reason) = results!, mode == .required {
                FileHandle.standardError.write(Data("converge-bench: --yrs was given, but the Yrs side cannot run: \(reason.message)\n".utf8))
                exit(1)
            }
        }
        return results!.flatMap { outcomes in
            outcomes[name].map { .success($0) } ?? .failure(Unavailable(message: "Yrs printed no figures for \(name)"))
        }
    }

    private static func run() -> Result<[String: MapWorkloads.Outcome], Unavailable> {
        if mode == .off { return .failure(Unavailable(message: "skipped (--no-yrs)")) }
        guard FileManager.default.fileExists(atPath: script) else { return .failure(Unavailable(message: "\(script) is missing")) }
        if mode == .automatic, !onPath("python3") {
            return .failure(Unavailable(message: "python3 is not on the PATH (run with --yrs once it is)"))
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["bash", script, "--repetitions", String(Measure.repetitions)]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError  // the script's progress (making its environment) shows
        do { try process.run() } catch { return .failure(Unavailable(message: "cannot run \(script): \(error)")) }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            return .failure(Unavailable(message: "\(script) exited with status \(process.terminationStatus)"))
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let workloads = object["workloads"] as? [String: [String: Any]] else {
            return .failure(Unavailable(message: "\(script) printed no JSON: \(String(decoding: data.prefix(200), as: UTF8.self))"))
        }
        var outcomes: [String: MapWorkloads.Outcome] = [:]
        for (name, figures) in workloads {
            guard let time = (figures["time_ms"] as? NSNumber)?.doubleValue, let update = (figures["update_bytes"] as? NSNumber)?.intValue,
                  let state = (figures["state_bytes"] as? NSNumber)?.intValue, time > 0, update > 0, state > 0 else {
                return .failure(Unavailable(message: "\(script) printed malformed figures for \(name)"))
            }
            outcomes[name] = MapWorkloads.Outcome(milliseconds: time, updateBytes: update, stateBytes: state)
        }
        version = object["pycrdt"] as? String
        return .success(outcomes)
    }

    /// The pycrdt version the figures came from, once the script ran.
    nonisolated(unsafe) private(set) static var version: String?

    private static func onPath(_ command: String) -> Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains { directory in
            FileManager.default.isExecutableFile(atPath: "\(directory)/\(command)")
        }
    }
}
