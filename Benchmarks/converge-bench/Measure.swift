import Foundation

/// Keeps a value alive and opaque to the optimiser, so the work that made it cannot be
/// removed.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// Timing with `ContinuousClock`: warm-up runs, then the median of several repetitions.
enum Measure {
    nonisolated(unsafe) static var repetitions = 5  // set once from the command line, before any benchmark
    static let warmups = 1

    /// The median time of `body`, in milliseconds; `setUp` runs before each repetition,
    /// untimed.
    static func median<State>(setUp: () -> State, _ body: (inout State) -> Void) -> Double {
        var samples: [Double] = []
        for round in 0..<(warmups + repetitions) {
            var state = setUp()
            let start = ContinuousClock.now
            body(&state)
            let elapsed = ContinuousClock.now - start
            blackHole(state)
            if round >= warmups { samples.append(milliseconds(elapsed)) }
        }
        samples.sort()
        return samples[samples.count / 2]
    }

    static func median(_ body: () -> Void) -> Double {
        median(setUp: { () }, { _ in body() })
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
    }

    /// Resident memory of this process, from /proc/self/statm (Linux), in bytes.
    static func residentBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// One benchmark's figures, printed as one JSON object per line.
struct BenchmarkResult {
    var name: String
    var figures: [(String, Double)]
    var goal: String?
    var met: Bool?

    func jsonLine() -> String {
        var parts = ["\"name\":\"\(name)\""]
        for (key, value) in figures {
            let rounded = (value * 1_000).rounded() / 1_000
            parts.append("\"\(key)\":\(rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int64(rounded)) : String(rounded))")
        }
        if let goal { parts.append("\"goal\":\"\(goal)\"") }
        if let met { parts.append("\"goal_met\":\(met)") }
        return "{" + parts.joined(separator: ",") + "}"
    }

    func text() -> String {
        let figures = self.figures.map { key, value in
            "\(key)=\(value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(format: "%.3f", value))"
        }.joined(separator: " ")
        let verdict = met.map { $0 ? "  [goal met: \(goal!)]" : "  [goal MISSED: \(goal!)]" } ?? ""
        return name.padding(toLength: 22, withPad: " ", startingAt: 0) + figures + verdict
    }
}
