/// Reduces a failing run to a smaller one that still fails, delta-debugging style: it
/// removes chunks of the plan (operations and faults, halving the chunk size down to one
/// event), then network decisions (a removed decision becomes a clean delivery), and
/// keeps each removal after which the run still fails.
package struct Shrinker {
    /// The most runs one shrink may try.
    package var maximumRuns: Int

    package init(maximumRuns: Int = 3_000) { self.maximumRuns = maximumRuns }

    /// The smallest failing input found, and how many runs it took.
    package func shrink(_ input: SimulationInput, fails: (SimulationInput) -> Bool) -> (input: SimulationInput, runs: Int) {
        var current = input
        if current.recordedFates == nil { current.recordedFates = [:] }
        var runs = 0
        var progress = true
        while progress && runs < maximumRuns {
            progress = false
            // The plan.
            let planReduced = reduce(current.plan, runs: &runs) { candidate in
                var trial = current
                trial.plan = candidate
                return fails(trial)
            }
            if planReduced.count < current.plan.count { current.plan = planReduced; progress = true }
            // The network's faults: drop decisions (each becomes a clean delivery).
            let ids = current.recordedFates!.keys.sorted().filter { current.recordedFates![$0]!.delaysMs.count != 1 }
            let fatesReduced = reduce(ids, runs: &runs) { kept in
                var trial = current
                let keep = Set(kept)
                trial.recordedFates = current.recordedFates!.filter { $0.value.delaysMs.count == 1 || keep.contains($0.key) }
                return fails(trial)
            }
            if fatesReduced.count < ids.count {
                let keep = Set(fatesReduced)
                current.recordedFates = current.recordedFates!.filter { $0.value.delaysMs.count == 1 || keep.contains($0.key) }
                progress = true
            }
        }
        return (current, runs)
    }

    /// Removes chunks of `items` while `stillFails` holds: chunks of half, then quarters,
    /// down to single items.
    private func reduce<T>(_ items: [T], runs: inout Int, stillFails: ([T]) -> Bool) -> [T] {
        var items = items
        var chunk = max(1, items.count / 2)
        while chunk >= 1 && !items.isEmpty && runs < maximumRuns {
            var start = 0
            var removedAny = false
            while start < items.count && runs < maximumRuns {
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
            chunk = chunk == 1 ? 1 : chunk / 2
            if chunk == 1 && !removedAny && items.count > 0 { continue }
        }
        return items
    }
}
