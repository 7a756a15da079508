/// Reduces a failing run to a smaller one that still fails, delta-debugging style: it
/// removes chunks of the plan (operations and faults, halving the chunk size down to one
/// event), then the network's faults (a removed decision becomes a clean delivery after
/// the minimum latency), then the clean decisions' own latencies, and finally moves the
/// plan to start near 0 and rounds its times; it keeps each change after which the run
/// still fails.
///
/// Network decisions name their message by link and number on the link (``MessageID``), so
/// a sync removed from one device's plan leaves every other link's decisions on the
/// messages they were made for.
package struct Shrinker {
    /// The most runs one shrink may try; `nil` chooses from the input's size (see
    /// ``budget(for:)``) and grants more passes while passes still remove something.
    package var maximumRuns: Int?

    package init(maximumRuns: Int? = nil) { self.maximumRuns = maximumRuns }

    /// The fewest and the most runs an adaptive budget allows.
    static let adaptiveRuns = 3_000...30_000

    /// The first budget for `input`: 40 runs per planned event and network fault, within
    /// ``adaptiveRuns``.
    package static func budget(for input: SimulationInput) -> Int {
        let faults = (input.recordedFates ?? [:]).values.filter { $0.delaysMs.count != 1 }.count
        return min(max(40 * (input.plan.count + faults), adaptiveRuns.lowerBound), adaptiveRuns.upperBound)
    }

    /// The checker a shrink of a run with `violations` keeps firing: the first found of the
    /// most telling kind (a lost write before the wrong value that follows from it, and so
    /// on), so that the shrunk run shows the failure that matters.
    package static func kindToKeep(of violations: [Violation]) -> Violation.Kind? {
        let order: [Violation.Kind] = [.lostWrite, .accounts, .integrity, .referenceModel, .quota, .compensation, .crdtLaws,
                                       .convergence, .liveness, .storage, .sync, .invariants, .determinism, .replay]
        let found = Set(violations.map(\.kind))
        return order.first { found.contains($0) } ?? violations.first?.kind
    }

    /// The smallest input found on which the checker of `kind` still fires (a shrink that
    /// wanders to another failure explains nothing about this one), and how many runs it
    /// took.
    package func shrink(_ input: SimulationInput, keepingFailure kind: Violation.Kind) -> (input: SimulationInput, runs: Int) {
        shrink(input) { candidate in
            SimulationRunner.run(candidate, checkDeterminism: false).violations.contains { $0.kind == kind }
        }
    }

    /// The smallest failing input found, and how many runs it took.
    package func shrink(_ input: SimulationInput, fails: (SimulationInput) -> Bool) -> (input: SimulationInput, runs: Int) {
        var current = input
        if current.recordedFates == nil { current.recordedFates = [:] }
        var budget = maximumRuns ?? Self.budget(for: input)
        var runs = 0
        var progress = true
        while progress {
            progress = false
            // The plan.
            let planReduced = reduce(current.plan, runs: &runs, budget: budget) { candidate in
                var trial = current
                trial.plan = candidate
                return fails(trial)
            }
            if planReduced.count < current.plan.count { current.plan = planReduced; progress = true }
            // The network's faults (losses, duplicates), then the latencies of clean
            // deliveries: each dropped decision becomes a delivery after the minimum latency.
            for faults in [true, false] {
                let fates = current.recordedFates!
                let ids = fates.keys.sorted().filter { (fates[$0]!.delaysMs.count != 1) == faults }
                let kept = reduce(ids, runs: &runs, budget: budget) { kept in
                    var trial = current
                    trial.recordedFates = Self.fates(fates, keeping: Set(kept), faults: faults)
                    return fails(trial)
                }
                if kept.count < ids.count {
                    current.recordedFates = Self.fates(fates, keeping: Set(kept), faults: faults)
                    progress = true
                }
            }
            if maximumRuns == nil && progress && runs >= budget && budget < Self.adaptiveRuns.upperBound {
                budget = min(budget + Self.budget(for: input) / 2, Self.adaptiveRuns.upperBound)
            }
            if runs >= budget { break }
        }
        // Normalise the times that are left: the plan moved to start near 0 and times in
        // round numbers, if the run still fails so.
        let start = current.plan.first?.timeMs ?? 0
        for (shift, step) in [(start, 100), (0, 100), (start, 10), (0, 10)] where runs < budget {
            let normalised = Self.rounded(Self.shifted(current, earlierBy: shift / step * step), toMultiplesOf: step)
            guard normalised.plan != current.plan || normalised.recordedFates != current.recordedFates else { continue }
            runs += 1
            if fails(normalised) {
                current = normalised
                break
            }
        }
        return (current, runs)
    }

    /// `input` with every planned event `milliseconds` earlier.
    static func shifted(_ input: SimulationInput, earlierBy milliseconds: Int) -> SimulationInput {
        var shifted = input
        shifted.plan = input.plan.map { TimedEvent(timeMs: max(0, $0.timeMs - milliseconds), event: $0.event) }
        return shifted
    }

    /// `fates` without the decisions of the kind `faults` says (faults, or clean
    /// deliveries) that `kept` does not hold.
    private static func fates(_ fates: [MessageID: NetworkFate], keeping kept: Set<MessageID>, faults: Bool) -> [MessageID: NetworkFate] {
        fates.filter { ($0.value.delaysMs.count != 1) != faults || kept.contains($0.key) }
    }

    /// `input` with every planned time and every recorded delay rounded down to a multiple
    /// of `step` (rounding down keeps the plan in time order), delays never below the
    /// run's minimum latency (a latency the network never draws would make another run).
    static func rounded(_ input: SimulationInput, toMultiplesOf step: Int) -> SimulationInput {
        var rounded = input
        let least = input.options.minLatencyMs
        rounded.plan = input.plan.map { TimedEvent(timeMs: $0.timeMs / step * step, event: $0.event) }
        rounded.recordedFates = input.recordedFates?.mapValues { NetworkFate(delaysMs: $0.delaysMs.map { max(least, $0 / step * step) }) }
        return rounded
    }

    /// Removes chunks of `items` while `stillFails` holds: chunks of half, then quarters,
    /// down to single items, within `budget` runs.
    private func reduce<T>(_ items: [T], runs: inout Int, budget: Int, stillFails: ([T]) -> Bool) -> [T] {
        var items = items
        var chunk = max(1, items.count / 2)
        while !items.isEmpty && runs < budget {
            var start = 0
            var removedAny = false
            while start < items.count && runs < budget {
                var candidate = items
                candidate.removeSubrange(start..<min(start + chunk, items.count))
                runs += 1
                if stillFails(candidate) {
                    items = candidate
                    removedAny = true
                } else {
                    start += chunk
                }
            }
            if chunk == 1 && !removedAny { break }
            chunk = max(1, chunk / 2)
        }
        return items
    }
}
