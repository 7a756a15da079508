import Converge
import ConvergeSimulation
import ConvergeSQLite
import Foundation

// converge-bench: prints one JSON object per benchmark per line (`--json`) or a table.
// Each figure is the median of several timed repetitions after a warm-up; where a
// baseline is measured in the same run, `ratio` is this project's time over the
// baseline's, so results hold on a noisy machine.

let usage = """
    converge-bench [--json] [--only NAME[,NAME...]] [--repetitions N]

    Runs the benchmarks in a release build: swift run -c release converge-bench
    Names: \(BenchmarkSuite.all.map(\.name).joined(separator: ", "))
    """

enum BenchmarkSuite {
    static let all: [(name: String, run: @Sendable () -> BenchmarkResult)] = [
        ("store.set", Benchmarks.storeSet),
        ("store.get", Benchmarks.storeGet),
        ("merge.delta", Benchmarks.deltaApply),
        ("merge.join", Benchmarks.join),
        ("b3.1", Benchmarks.b31),
        ("sync.entry", SyncBenchmarks.bytesPerChangedEntry),
        ("sync.steady", SyncBenchmarks.steadyStateExchange),
        ("metadata.state", SyncBenchmarks.metadataPerKey),
        ("metadata.memory", SyncBenchmarks.residentMemory),
        ("simulation.events", SyncBenchmarks.simulationThroughput),
        ("sqlite.batch", StorageBenchmarks.batchedWrites),
        ("sqlite.reopen", StorageBenchmarks.reopen),
    ]
}

func failUsage(_ message: String) -> Never {
    FileHandle.standardError.write(Data("converge-bench: \(message)\n\(usage)\n".utf8))
    exit(2)
}

if _isDebugAssertConfiguration() {
    FileHandle.standardError.write(Data("converge-bench: refusing to run in a debug build (figures would mean nothing); use `swift run -c release converge-bench`\n".utf8))
    exit(2)
}

var json = false
var only: Set<String>?
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    switch argument {
    case "--json": json = true
    case "--only":
        guard !arguments.isEmpty else { failUsage("--only needs names") }
        let names = Set(arguments.removeFirst().split(separator: ",").map(String.init))
        let unknown = names.subtracting(BenchmarkSuite.all.map(\.name))
        guard unknown.isEmpty else { failUsage("unknown benchmark \(unknown.sorted().joined(separator: ", "))") }
        only = names
    case "--repetitions":
        guard let text = arguments.first, let n = Int(text), n >= 1, n <= 1_000 else { failUsage("--repetitions needs an integer in 1...1000") }
        arguments.removeFirst()
        Measure.repetitions = n
    case "--memory-probe":
        SyncBenchmarks.memoryProbe()
        exit(0)
    case "--help", "-h":
        print(usage)
        exit(0)
    default: failUsage("unknown option \(argument)")
    }
}

for benchmark in BenchmarkSuite.all where only?.contains(benchmark.name) ?? true {
    let result = benchmark.run()
    print(json ? result.jsonLine() : result.text())
}
