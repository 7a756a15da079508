import Converge
import ConvergeSimulation
import Testing

/// Policies and workloads of one's own, through `ConvergeSimulation`'s public API only
/// (this file imports nothing package-internal).
@Suite("Policies and workloads of one's own")
struct PluggableTests {
    /// The largest value by its size in bytes wins; ties go to last-writer-wins.
    static let largestWins = MergePolicy.custom("largest-wins") { siblings in
        siblings.filter { $0.value != nil }
            .max { lhs, rhs in
                let (left, right) = (lhs.value!.encodedSize, rhs.value!.encodedSize)
                return left != right ? left < right : (lhs.timestamp, lhs.dot) < (rhs.timestamp, rhs.dot)
            }?.value
    }

    /// Every device hammers two keys: the conflicts an app-side merge would face.
    struct HotKeys: Workload {
        func operations(options: SimulationOptions, random: inout some RandomNumberGenerator) -> [WorkloadOperation] {
            (1...options.operations).map { index in
                WorkloadOperation(timeMs: index * 15, device: Int.random(in: 0..<options.devices, using: &random),
                                  kind: index % 10 == 0 ? .remove(key: index % 2) : .set(key: index % 2, valueBytes: Int.random(in: 1...40, using: &random)))
            }
        }
    }

    @Test func aCustomPolicyRunsUnderEveryCheckerAndReadsDifferently() throws {
        var hidden: [String: Int] = [:], hiddenLater: [String: Int] = [:]
        for policy in [nil, Self.largestWins, MergePolicy.multiValue] {
            for seed: UInt64 in 0..<3 {
                var input = try SimulationInput(scenario: SmallScenarios.plain, seed: seed, workload: HotKeys())
                input.customPolicy = policy
                let result = SimulationRunner.run(input)
                #expect(result.passed, "\(policy?.name ?? "lww") seed \(seed): \(result.violations)")
                hidden[result.metrics.policy.name, default: 0] += result.metrics.policy.lostUpdates
                hiddenLater[result.metrics.policy.name, default: 0] += result.metrics.policy.lostUpdatesLaterInTrueTime
            }
        }
        #expect(hidden.keys.sorted() == ["largest-wins", "lww", "multi-value"])
        #expect(hidden["multi-value"] == 0 && hidden["lww"]! > 0 && hidden["largest-wins"]! > 0)
        // Last-writer-wins hides a later write only when clocks disagree; the largest value
        // wins whatever its time, so it hides later writes far more often.
        #expect(hiddenLater["largest-wins"]! > hiddenLater["lww"]!, "\(hiddenLater)")
    }

    @Test func aCustomPolicyThatReadsDifferentlyOnEachReplicaIsCaught() throws {
        // Reads must be a function of the siblings: one that is not makes replicas that hold
        // the same siblings show different values, which the convergence checker sees (or the
        // liveness checker, as a replica that still reads differently from the hub after the
        // heal: about one run in thirty, the coin being the process's own randomness).
        let coin = MergePolicy.custom("coin") { siblings in siblings.randomElement()?.value }
        var input = try SimulationInput(scenario: SmallScenarios.plain, seed: 5, workload: HotKeys())
        input.customPolicy = coin
        let result = SimulationRunner.run(input)
        #expect(!result.passed)
        #expect(result.violations.contains { [.convergence, .determinism, .liveness].contains($0.kind) }, "\(result.violations)")
    }

    @Test func aWorkloadReplacesTheOperationsAndKeepsTheFaults() throws {
        let scenario = SmallScenarios.crashy
        let plain = try SimulationInput(scenario: scenario, seed: 2)
        let hot = try SimulationInput(scenario: scenario, seed: 2, workload: HotKeys())
        let result = SimulationRunner.run(hot)
        #expect(result.passed, "\(result.violations)")
        let operations = 300
        #expect(result.metrics.operations.set + result.metrics.operations.remove + result.metrics.operations.onCrashedDevices >= operations - 1)
        #expect(result.metrics.faults.crashes == SimulationRunner.run(plain).metrics.faults.crashes)
        #expect(result.metrics.faults.crashes > 0)
    }

    struct Listed: Workload {
        var list: [WorkloadOperation]
        func operations(options: SimulationOptions, random: inout some RandomNumberGenerator) -> [WorkloadOperation] { list }
    }

    @Test(arguments: [
        (WorkloadOperation(timeMs: 5, device: 3, kind: .synchronize), "workload operation 0: device 3 of 3"),
        (WorkloadOperation(timeMs: 5, device: 0, kind: .set(key: 99_999, valueBytes: 4)), "workload operation 0: key 99999 of"),
        (WorkloadOperation(timeMs: -1, device: 0, kind: .read(key: 0)), "workload operation 0: negative time -1"),
        (WorkloadOperation(timeMs: 5, device: 0, kind: .set(key: 0, valueBytes: 0)), "workload operation 0: a value of 0 bytes"),
    ])
    func anInvalidOperationIsRefusedWithItsNumber(operation: WorkloadOperation, message: String) {
        do {
            _ = try SimulationInput(scenario: SmallScenarios.plain, seed: 0, workload: Listed(list: [operation]))
            Issue.record("accepted \(operation)")
        } catch {
            #expect(error.message.hasPrefix(message), "\(error.message)")
        }
    }
}
