import Foundation

/// One benchmark: its name, its group (for `--only`), and what runs it.
struct Benchmark: Sendable {
    var name: String
    var group: String
    var run: @Sendable () -> BenchmarkResult
}

/// Every benchmark, in the order they run: issue 14's goals first (the store against a
/// dictionary, costs that follow what changed, the map workloads against Yrs), then the
/// others.
enum BenchmarkSuite {
    static let all: [Benchmark] = [
        Benchmark(name: "store.set.1k", group: "store") { StoreBenchmarks.set(keys: 1_000, name: "store.set.1k") },
        Benchmark(name: "store.set.100k", group: "store") { StoreBenchmarks.set(keys: 100_000, name: "store.set.100k") },
        Benchmark(name: "store.set.1m", group: "store") { StoreBenchmarks.set(keys: 1_000_000, name: "store.set.1m") },
        Benchmark(name: "store.get.1k", group: "store") { StoreBenchmarks.get(keys: 1_000, name: "store.get.1k") },
        Benchmark(name: "store.get.100k", group: "store") { StoreBenchmarks.get(keys: 100_000, name: "store.get.100k") },
        Benchmark(name: "store.get.1m", group: "store") { StoreBenchmarks.get(keys: 1_000_000, name: "store.get.1m") },
        Benchmark(name: "store.set.replicas", group: "store", run: StoreBenchmarks.setWithLargeContext),
        Benchmark(name: "delta.1key", group: "change", run: ChangeBenchmarks.oneKeyDelta),
        Benchmark(name: "merge.1key", group: "change", run: ChangeBenchmarks.oneKeyMerge),
        Benchmark(name: "hub.push.keys", group: "change", run: ChangeBenchmarks.hubPushByKeys),
        Benchmark(name: "hub.push.members", group: "change", run: ChangeBenchmarks.hubPushByMembers),
        Benchmark(name: "hub.reply.bytes", group: "change", run: ChangeBenchmarks.oneKeyReplyBytes),
    ] + MapWorkloads.all.map { workload in
        Benchmark(name: workload.name, group: "yrs") { MapWorkloads.result(workload.name) }
    } + [
        Benchmark(name: "sqlite.batch", group: "sqlite", run: StorageBenchmarks.batchedWrites),
        Benchmark(name: "sqlite.reopen", group: "sqlite", run: StorageBenchmarks.reopen),
        Benchmark(name: "sqlite.write", group: "sqlite", run: StorageBenchmarks.singleWrites),
        Benchmark(name: "simulation.run", group: "simulation", run: SimulationBenchmarks.run),
        Benchmark(name: "simulation.events", group: "simulation", run: SimulationBenchmarks.events),
        Benchmark(name: "simulation.sweep", group: "sweep", run: SimulationBenchmarks.sweep),
        Benchmark(name: "memory.1024", group: "memory") { MemoryBenchmarks.compare(keys: 1_024, name: "memory.1024") },
        Benchmark(name: "memory.100k", group: "memory") { MemoryBenchmarks.compare(keys: 100_000, name: "memory.100k") },
        Benchmark(name: "memory.peer-array", group: "memory") {
            MemoryBenchmarks.compare(keys: 16_000_000, name: "memory.peer-array", received: true)
        },
        Benchmark(name: "merge.delta", group: "merge", run: MergeBenchmarks.deltaApply),
        Benchmark(name: "merge.join", group: "merge", run: MergeBenchmarks.join),
        Benchmark(name: "sync.entry", group: "sync", run: SyncBenchmarks.bytesPerChangedEntry),
        Benchmark(name: "sync.steady", group: "sync", run: SyncBenchmarks.steadyStateExchange),
        Benchmark(name: "metadata.state", group: "sync", run: SyncBenchmarks.metadataPerKey),
        Benchmark(name: "mesh.withdrawn", group: "mesh", run: MeshBenchmarks.withdrawnAtTheBound),
    ]

    /// The groups, in the order their benchmarks run.
    static var groups: [String] {
        var seen: [String] = []
        for benchmark in all where !seen.contains(benchmark.group) { seen.append(benchmark.group) }
        return seen
    }

    static var usage: String {
        let table = groups.map { group in
            "  \(group.padding(toLength: 11, withPad: " ", startingAt: 0))" + all.filter { $0.group == group }.map(\.name).joined(separator: ", ")
        }.joined(separator: "\n")
        return """
            converge-bench [--json] [--only NAME|GROUP[,...]] [--repetitions N] [--yrs | --no-yrs]

            Runs the benchmarks in a release build: swift run -c release converge-bench
              --json            one JSON object per benchmark per line
              --only            benchmarks or groups to run (default: all)
              --repetitions N   timed repetitions per figure, after a warm-up (default 5)
              --yrs             require the Yrs side of the map workloads (Benchmarks/yrs/run.sh,
                                which makes its own Python environment with pycrdt); fail if it
                                cannot run. By default it runs when python3 is on the PATH.
              --no-yrs          print Converge's side of the map workloads only
            Groups and their benchmarks:
            \(table)
            """
    }
}
