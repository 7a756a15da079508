extension StabilityTracker {
    /// Traps if an invariant is broken, in debug builds only; release builds pay nothing.
    @inline(__always)
    package func _checkInvariants() {
        #if DEBUG
        if let violation = _invariantViolation() { preconditionFailure("StabilityTracker invariant broken: \(violation)") }
        #endif
    }

    /// The first broken invariant, described, or `nil` if all hold:
    /// - at most ``maximumCandidates`` candidates are remembered;
    /// - a candidate's frontier is a minimum over acknowledgements that include each
    ///   witness's own, so it never exceeds what a witness acknowledged of its own writes
    ///   (`frontier[w] <= witnessed[w]` for every witness `w`); a candidate that broke this
    ///   could declare a tombstone stable while a concurrent write is still unseen;
    /// - the version vectors hold their own invariants.
    ///
    /// - Complexity: O(*c* · *r*) for *c* candidates of *r* replicas.
    package func _invariantViolation() -> String? {
        if candidates.count > Self.maximumCandidates {
            return "\(candidates.count) candidates, more than \(Self.maximumCandidates)"
        }
        if let violation = safeFrontier._invariantViolation() { return "safe frontier: \(violation)" }
        for (index, candidate) in candidates.enumerated() {
            if let violation = candidate.frontier._invariantViolation() ?? candidate.witnessed._invariantViolation() {
                return "candidate \(index): \(violation)"
            }
            for (witness, counter) in candidate.witnessed.sortedEntries where candidate.frontier[witness] > counter {
                return "candidate \(index) has frontier \(candidate.frontier[witness]) for \(witness), beyond the \(counter) it witnessed"
            }
        }
        return nil
    }
}
