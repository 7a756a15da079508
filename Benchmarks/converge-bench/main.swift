import Foundation

// converge-bench: prints one line per benchmark, as text or as one JSON object (`--json`).
// Each time is the median of several repetitions after a warm-up, in CPU time of the
// measuring thread unless a figure says wall-clock; where a goal compares with a baseline,
// the baseline is measured in the same run, so the ratio holds on a noisy machine.

func failUsage(_ message: String) -> Never {
    FileHandle.standardError.write(Data("converge-bench: \(message)\n\(BenchmarkSuite.usage)\n".utf8))
    exit(2)
}

var json = false
var selected: Set<String>?
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    switch argument {
    case "--json": json = true
    case "--only":
        guard let list = arguments.first else { failUsage("--only needs names") }
        arguments.removeFirst()
        var names: Set<String> = []
        for item in list.split(separator: ",").map(String.init) {
            let matching = BenchmarkSuite.all.filter { $0.name == item || $0.group == item }.map(\.name)
            guard !matching.isEmpty else { failUsage("unknown benchmark or group \"\(item)\"") }
            names.formUnion(matching)
        }
        selected = names
    case "--repetitions":
        guard let text = arguments.first, let n = Int(text), n >= 1, n <= 1_000 else { failUsage("--repetitions needs an integer in 1...1000") }
        arguments.removeFirst()
        Measure.repetitions = n
    case "--yrs": YrsPeer.mode = .required
    case "--no-yrs": YrsPeer.mode = .off
    case "--memory-probe":
        MemoryBenchmarks.probe(arguments)
        exit(0)
    case "--help", "-h":
        print(BenchmarkSuite.usage)
        exit(0)
    default: failUsage("unknown option \(argument)")
    }
}

/// Figures of a debug build would mean nothing.
func refuseDebugBuilds() {
    #if DEBUG
    FileHandle.standardError.write(Data("converge-bench: refusing to run in a debug build (figures would mean nothing); use `swift run -c release converge-bench`\n".utf8))
    exit(2)
    #endif
}

refuseDebugBuilds()

if !json {
    FileHandle.standardOutput.write(Data(("converge-bench: medians of \(Measure.repetitions) after a warm-up; times are CPU time of the measuring thread unless named wall; ratios are against a baseline measured in this run\n").utf8))
}
for benchmark in BenchmarkSuite.all where selected?.contains(benchmark.name) ?? true {
    let result = benchmark.run()
    // Unbuffered, so a long run shows each line as it is measured.
    FileHandle.standardOutput.write(Data(((json ? result.jsonLine() : result.text()) + "\n").utf8))
}
