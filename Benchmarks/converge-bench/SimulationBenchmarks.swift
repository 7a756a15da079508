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

    /// CPU time every process of the machine has used since boot (Linux's /proc/stat), in
    /// milliseconds; `nil` where it cannot be read.
    static func machineBusyMilliseconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard ticks.count >= 8 else { return nil }
        // user, nice, system, idle, iowait, irq, softirq, steal: all but idle and iowait.
        let busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
        return busy * 1_000 / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// simulation.sweep: `converge-sim run --seeds '0..<1000'` (the default scenario, every
    /// run executed twice to check determinism) with 1 and with 2 threads, once each. Wall
    /// time decides; the CPU time other processes took meanwhile shows whether the cores
    /// were free to take two threads.
    static func sweep() -> BenchmarkResult {
        let seeds = Array(UInt64(0)..<1_000)
        func sweep(jobs: Int) -> (wall: Double, cpu: Double, others: Double?, digests: [String]) {
            let startWall = Measure.wallMilliseconds(), startCPU = Measure.processCPUMilliseconds(), startBusy = machineBusyMilliseconds()
            let results = SimulationRunner.sweep(seeds: seeds, jobs: jobs) { seed in
                SimulationRunner.run(try! SimulationInput(scenario: .standard, seed: seed))
            }
            let wall = Measure.wallMilliseconds() - startWall, cpu = Measure.processCPUMilliseconds() - startCPU
            let others = startBusy.flatMap { start in machineBusyMilliseconds().map { max(0, $0 - start - cpu) } }
            let failed = results.filter { !$0.passed }.map(\.seed)
            precondition(failed.isEmpty, "the sweep failed for seeds \(failed.prefix(10))")
            return (wall, cpu, others, results.map(\.digest))
        }
        let one = sweep(jobs: 1), two = sweep(jobs: 2)
        precondition(one.digests == two.digests, "the sweep gave different runs on 1 and on 2 threads")
        let speedup = one.wall / two.wall
        let cores = SimulationRunner.availableCores
        var figures: [(String, Double)] = [
            ("seeds", Double(seeds.count)), ("wall_s_1_job", one.wall / 1_000), ("wall_s_2_jobs", two.wall / 1_000),
            ("cpu_s_1_job", one.cpu / 1_000), ("cpu_s_2_jobs", two.cpu / 1_000), ("cores", Double(cores)),
        ]
        var note = "one sweep each"
        if let others = two.others {
            // Two threads can only be twice as fast if two cores are free: say when other work held them.
            let share = others / (two.wall * Double(cores))
            figures.append(("other_processes_cpu_share_2_jobs", share))
            if share > 0.1 {
                note += "; other processes took \(Int((share * 100).rounded()))% of the \(cores) cores during the 2-thread sweep, so the speedup understates"
            }
        }
        return BenchmarkResult(name: "simulation.sweep", figures: figures + [("speedup", speedup)],
                               goal: "speedup >= 1.8", met: speedup >= 1.8, note: note)
    }
}
