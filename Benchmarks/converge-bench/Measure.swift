import Foundation

/// Keeps a value alive and opaque to the optimiser, so the work that made it cannot be
/// removed.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// One timed measurement: the calling thread's CPU time and the wall-clock time, in
/// milliseconds.
///
/// CPU time is what most figures report: the machine is shared, and another process
/// taking the core inflates wall-clock time but not the thread's CPU time. Wall-clock time
/// is what counts where the work waits (SQLite's `fsync`) or runs on several threads.
struct Timing {
    var cpuMilliseconds: Double
    var wallMilliseconds: Double

    static func - (lhs: Timing, rhs: Timing) -> Timing {
        Timing(cpuMilliseconds: lhs.cpuMilliseconds - rhs.cpuMilliseconds, wallMilliseconds: lhs.wallMilliseconds - rhs.wallMilliseconds)
    }
}

/// Timing: warm-up runs, then the median of several repetitions.
enum Measure {
    nonisolated(unsafe) static var repetitions = 5  // set once from the command line, before any benchmark
    static let warmups = 1
    /// A warm-up longer than this (wall-clock) counts as a sample, and three samples in all
    /// are taken: multi-second runs need no warming, and the whole suite must stay within
    /// a few minutes.
    static let longRunMilliseconds = 1_500.0

    /// The calling thread's CPU time, in milliseconds.
    static func threadCPUMilliseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1_000 + Double(time.tv_nsec) / 1e6
    }

    /// The whole process's CPU time (every thread, user and system), in milliseconds.
    static func processCPUMilliseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1_000 + Double(time.tv_nsec) / 1e6
    }

    static func wallMilliseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) * 1_000 + Double(time.tv_nsec) / 1e6
    }

    /// Now, on both clocks.
    static func now() -> Timing {
        Timing(cpuMilliseconds: threadCPUMilliseconds(), wallMilliseconds: wallMilliseconds())
    }

    /// The median timing of `body` (each clock's median on its own); `setUp` runs before
    /// each repetition and `check` after it, untimed: `check` is where a benchmark proves
    /// the work was done right (a benchmark whose output is wrong measures nothing).
    static func median<State>(setUp: () -> State, _ body: (inout State) -> Void, check: (State) -> Void = { _ in }) -> Timing {
        var samples: [Timing] = []
        var wanted = repetitions
        var round = 0
        while samples.count < wanted {
            var state = setUp()
            let start = now()
            body(&state)
            let elapsed = now() - start
            check(state)
            blackHole(state)
            if round >= warmups {
                samples.append(elapsed)
            } else if elapsed.wallMilliseconds > longRunMilliseconds {
                samples.append(elapsed)
                wanted = min(repetitions, 3)
            }
            round += 1
        }
        return medianOf(samples)
    }

    static func median(_ body: () -> Void) -> Timing {
        median(setUp: { () }, { _ in body() })
    }

    /// The median cost of one operation, in nanoseconds of CPU time: the operation runs
    /// in batches long enough to time (about 20 ms, at least one operation), after a
    /// calibration and a warm-up batch; the median batch divided by its size.
    ///
    /// `prepare(i)` makes the input of the `i`th call (0, 1, 2, ... across every batch, in
    /// order), untimed, before the batch that uses it: an operation that changes state can
    /// get a fresh input every time.
    static func nanosecondsPerOperation<Input>(prepare: (Int) -> Input, _ operation: (Input) -> Void) -> (nanoseconds: Double, batch: Int) {
        var next = 0
        func time(_ count: Int) -> Double {
            let inputs = (next..<next + count).map(prepare)
            next += count
            let start = threadCPUMilliseconds()
            for input in inputs { operation(input) }
            return threadCPUMilliseconds() - start
        }
        var batch = 1
        var elapsed = time(batch)
        while elapsed < 2 {
            batch *= 2
            elapsed = time(batch)
        }
        batch = max(1, Int(20 / (elapsed / Double(batch))))
        var samples: [Double] = []
        for round in 0..<(warmups + repetitions) {
            let elapsed = time(batch)
            if round >= warmups { samples.append(elapsed * 1e6 / Double(batch)) }
        }
        samples.sort()
        return (samples[samples.count / 2], batch)
    }

    static func nanosecondsPerOperation(_ operation: () -> Void) -> (nanoseconds: Double, batch: Int) {
        nanosecondsPerOperation(prepare: { _ in () }, { _ in operation() })
    }

    static func medianOf(_ samples: [Timing]) -> Timing {
        let cpu = samples.map(\.cpuMilliseconds).sorted(), wall = samples.map(\.wallMilliseconds).sorted()
        return Timing(cpuMilliseconds: cpu[cpu.count / 2], wallMilliseconds: wall[wall.count / 2])
    }

    /// Anonymous resident memory of this process (heap, not code or mapped files), from
    /// /proc/self/status on Linux, in bytes; the whole resident set where that is missing.
    static func residentBytes() -> Int? {
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
           let line = status.split(separator: "\n").first(where: { $0.hasPrefix("RssAnon:") }),
           let kilobytes = Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "") {
            return kilobytes * 1_024
        }
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// One benchmark's figures, printed as one JSON object per line or as a line of text.
struct BenchmarkResult {
    var name: String
    var figures: [(String, Double)]
    /// What the figures are held to, in words (`ratio <= 1.5`), if anything.
    var goal: String?
    /// Whether the goal is met; `nil` when it could not be judged (a peer was unavailable).
    var met: Bool?
    /// Words for a reader: what was left out, or why the goal could not be judged.
    var note: String?

    init(name: String, figures: [(String, Double)], goal: String? = nil, met: Bool? = nil, note: String? = nil) {
        self.name = name
        self.figures = figures
        self.goal = goal
        self.met = met
        self.note = note
    }

    /// A result held to `ratio <= limit` (or `>=` with `atLeast`), judged from `ratio`.
    init(name: String, figures: [(String, Double)], ratio: Double, atMost limit: Double, goal: String? = nil) {
        self.init(name: name, figures: figures + [("ratio", ratio)], goal: goal ?? "ratio <= \(limit)", met: ratio <= limit)
    }

    func jsonLine() -> String {
        var parts = ["\"name\":\(Self.quoted(name))"]
        for (key, value) in figures {
            let rounded = (value * 1_000).rounded() / 1_000
            parts.append("\"\(key)\":\(rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int64(rounded)) : String(rounded))")
        }
        if let goal { parts.append("\"goal\":\(Self.quoted(goal))") }
        if goal != nil { parts.append("\"goal_met\":\(met.map(String.init) ?? "null")") }
        if let note { parts.append("\"note\":\(Self.quoted(note))") }
        return "{" + parts.joined(separator: ",") + "}"
    }

    func text() -> String {
        let figures = self.figures.map { key, value in
            "\(key)=\(value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(format: value.magnitude < 10 ? "%.3f" : "%.1f", value))"
        }.joined(separator: " ")
        var verdict = ""
        if let goal {
            switch met {
            case true?: verdict = "  [goal met: \(goal)]"
            case false?: verdict = "  [goal MISSED: \(goal)]"
            case nil: verdict = "  [goal not judged: \(goal)]"
            }
        }
        let note = self.note.map { "  (\($0))" } ?? ""
        return name.padding(toLength: 20, withPad: " ", startingAt: 0) + " " + figures + verdict + note
    }

    static func quoted(_ text: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
}
