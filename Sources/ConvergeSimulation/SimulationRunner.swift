import Foundation
import Synchronization

/// Runs simulations: one input (checking determinism by running it twice), or a sweep
/// of seeds across cores.
public enum SimulationRunner {
    /// Runs `input`; with `checkDeterminism`, runs it a second time and adds a violation if
    /// the two digests differ.
    public static func run(_ input: SimulationInput, checkDeterminism: Bool = true) -> SimulationResult {
        var result = Simulation(input).run()
        if checkDeterminism {
            let again = Simulation(input).run()
            if again.digest != result.digest {
                result.violations.append(Violation(.determinism, "two runs of the same input gave digests \(result.digest) and \(again.digest)"))
            }
        }
        return result
    }

    /// Runs `body` for each seed on `jobs` threads; results come back in seed order.
    public static func sweep<Result: Sendable>(seeds: [UInt64], jobs: Int, _ body: @escaping @Sendable (UInt64) -> Result) -> [Result] {
        let results = Mutex<[Result?]>(Array(repeating: nil, count: seeds.count))
        let next = Atomic<Int>(0)
        let workers = max(1, min(jobs, seeds.count))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while true {
                let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard index < seeds.count else { return }
                let result = body(seeds[index])
                results.withLock { $0[index] = result }
            }
        }
        return results.withLock { $0.map { $0! } }
    }

    /// The number of cores this machine has.
    public static var availableCores: Int { ProcessInfo.processInfo.activeProcessorCount }
}
