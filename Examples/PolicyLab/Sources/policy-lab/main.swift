import Converge
import ConvergeSimulation
import Foundation

// policy-lab: a merge policy and a workload written outside Converge, compared with the
// built-in policies on the same seeds (the same hostile histories: loss, duplication,
// partitions, crashes and skewed clocks drawn from each seed). Every run is checked by
// every checker of the simulator; the table shows what each policy hid from reads.

/// The app's own policy: of concurrent values, the one with the most bytes wins (a draft
/// with more text beats a shorter one), ties broken by last-writer-wins.
let longestWins = MergePolicy.custom("longest-wins") { siblings in
    siblings.filter { $0.value != nil }
        .max { lhs, rhs in
            let (left, right) = (lhs.value!.encodedSize, rhs.value!.encodedSize)
            return left != right ? left < right : (lhs.timestamp, lhs.dot) < (rhs.timestamp, rhs.dot)
        }?.value
}

/// The app's own workload: every device edits the same three drafts in bursts and syncs
/// after each burst, as a note-taking app that merges on its side would.
struct DraftEditing: Workload {
    func operations(options: SimulationOptions, random: inout some RandomNumberGenerator) -> [WorkloadOperation] {
        var operations: [WorkloadOperation] = []
        var time = 0
        while operations.count < options.operations {
            let device = Int.random(in: 0..<options.devices, using: &random)
            let draft = Int.random(in: 0..<3, using: &random)
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                time += Int.random(in: 5...60, using: &random)
                operations.append(WorkloadOperation(timeMs: time, device: device,
                                                    kind: .set(key: draft, valueBytes: Int.random(in: 8...200, using: &random))))
            }
            operations.append(WorkloadOperation(timeMs: time + 1, device: device, kind: .synchronize))
        }
        return operations
    }
}

var scenario = Scenario(name: "drafts")
do {
    try scenario.set(\.devices, to: 4)
    try scenario.set(\.operations, to: 400)
    try scenario.set(\.loss, to: 0.1)
    try scenario.set(\.duplicate, to: 0.05)
    try scenario.set(\.partitions, to: 2)
    try scenario.set(\.crashes, to: 2)
    try scenario.set(\.clockSkewMs, to: 400)
} catch {
    print("policy-lab: \(error)")
    exit(2)
}
let seedCount = CommandLine.arguments.dropFirst().first.flatMap { UInt64($0) } ?? 12

let contenders: [(name: String, custom: MergePolicy?, builtIn: PolicyName)] = [
    ("lww", nil, .lww), ("add-wins", nil, .addWins), ("multi-value", nil, .multiValue), (longestWins.name, longestWins, .lww),
]
print("policy        passed  conflicts  hidden updates  hidden later writes   (sums over seeds 0..<\(seedCount))")
var anyFailed = false
for contender in contenders {
    var passed = 0, conflicts = 0, hidden = 0, hiddenLater = 0
    for seed in 0..<seedCount {
        var withPolicy = scenario
        try! withPolicy.set(\.policy, to: contender.builtIn)
        var input = try! SimulationInput(scenario: withPolicy, seed: seed, workload: DraftEditing())
        input.customPolicy = contender.custom
        let result = SimulationRunner.run(input)
        if result.passed { passed += 1 } else {
            anyFailed = true
            print("FAIL \(contender.name) seed \(seed): \(result.violations.first!)")
        }
        conflicts += result.metrics.policy.conflictsResolvedByWrites
        hidden += result.metrics.policy.lostUpdates
        hiddenLater += result.metrics.policy.lostUpdatesLaterInTrueTime
    }
    let name = contender.name.padding(toLength: 12, withPad: " ", startingAt: 0)
    print("\(name)  \(passed)/\(seedCount)  \(String(conflicts).leftPadded(9))  \(String(hidden).leftPadded(14))  \(String(hiddenLater).leftPadded(19))")
}
exit(anyFailed ? 1 : 0)

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
