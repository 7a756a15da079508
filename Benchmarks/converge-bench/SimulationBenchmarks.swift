import ConvergeSimulation
import Foundation

/// The simulator: one large run, its throughput, and a sweep on one and on two threads.
enum SimulationBenchmarks {
    /// The large run: what `converge-sim run --seed 0 --devices 10 --operations 100000
    /// --loss 0.1` runs (the command line's defaults otherwise), executed once per sample
    /// (converge-sim runs it a second time to check determinism; that is not counted).
    static func largeInput() -> SimulationInput {
        var scenario = Scenario.standard
        try! scenario.set(\.devices, to: 10)
        try! scenario.set(\.operations, to: 100_000)
        try! scenario.set(\.loss, to: 0.1)
        return try! SimulationInput(scenario: scenario, seed: 0)
    }

    struct LargeRun {
        var timing: Timing
        var events: Int
    }

    // Shared by simulation.run and simulation.events, which report two figures of the same runs.
    nonisolated(unsafe) private static var large: LargeRun?

    static func largeRun() -> LargeRun {
        if let large { return large }
        let input = largeInput()
        var events = 0
        let timing = Measure.median(setUp: { () }) { _ in
            let result = Simulation(input).run()
            precondition(result.passed, "the benchmark run failed: \(result.violations)")
            events = result.metrics.checks.events
        }
        precondition(events > 100_000, "the run processed only \(events) events")
        let run = LargeRun(timing: timing, events: events)
        large = run
        return run
    }

    /// simulation.run: the large run's CPU time.
    static func run() -> BenchmarkResult {
        let run = largeRun()
        return BenchmarkResult(name: "simulation.run", figures: [
            ("devices", 10), ("operations", 100_000), ("loss", 0.1), ("events", Double(run.events)),
            ("cpu_s", run.timing.cpuMilliseconds / 1_000), ("wall_s", run.timing.wallMilliseconds / 1_000),
        ], goal: "cpu_s <= 1", met: run.timing.cpuMilliseconds <= 1_000)
    }

    /// simulation.events: simulated events per second of CPU time in the large run.
    static func events() -> BenchmarkResult {
        let run = largeRun()
        let perSecond = Double(run.events) / run.timing.cpuMilliseconds * 1_000
        return BenchmarkResult(name: "simulation.events", figures: [("events", Double(run.events)), ("events_per_s", perSecond)],
                               goal: "events_per_s >= 200,000 (one core)", met: perSecond >= 200_000)
    }

    /// simulation.sweep: `converge-sim run --seeds '0..<1000'` (the default scenario, every
    /// run executed twice to check determinism) with 1 and with 2 threads, once each. Wall
    /// time decides; the process's CPU time and the load average show what else ran.
    static func sweep() -> BenchmarkResult {
        let seeds = Array(UInt64(0)..<1_000)
        func sweep(jobs: Int) -> (wall: Double, cpu: Double, digests: [String]) {
            let startWall = Measure.wallMilliseconds(), startCPU = Measure.processCPUMilliseconds()
            let results = SimulationRunner.sweep(seeds: seeds, jobs: jobs) { seed in
                SimulationRunner.run(try! SimulationInput(scenario: .standard, seed: seed))
            }
            let wall = Measure.wallMilliseconds() - startWall, cpu = Measure.processCPUMilliseconds() - startCPU
            let failed = results.filter { !$0.passed }.map(\.seed)
            precondition(failed.isEmpty, "the sweep failed for seeds \(failed.prefix(10))")
            return (wall, cpu, results.map(\.digest))
        }
        let one = sweep(jobs: 1), two = sweep(jobs: 2)
        precondition(one.digests == two.digests, "the sweep gave different runs on 1 and on 2 threads")
        var load = [0.0, 0.0, 0.0]
        _ = getloadavg(&load, 3)
        let speedup = one.wall / two.wall
        return BenchmarkResult(name: "simulation.sweep", figures: [
            ("seeds", Double(seeds.count)), ("wall_s_1_job", one.wall / 1_000), ("wall_s_2_jobs", two.wall / 1_000),
            ("cpu_s_1_job", one.cpu / 1_000), ("cpu_s_2_jobs", two.cpu / 1_000), ("cores", Double(SimulationRunner.availableCores)),
            ("load_average", load[0]), ("speedup", speedup),
        ], goal: "speedup >= 1.8", met: speedup >= 1.8, note: "one sweep each")
    }
}
