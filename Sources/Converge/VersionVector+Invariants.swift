extension VersionVector {
    /// Traps if an invariant is broken, in debug builds only; release builds pay nothing.
    @inline(__always)
    package func _checkInvariants() {
        #if DEBUG
        if let violation = _invariantViolation() { preconditionFailure("VersionVector invariant broken: \(violation)") }
        #endif
    }

    /// The first broken invariant, described, or `nil`: no counter is zero (a zero counter
    /// is "nothing incorporated", which is represented by absence, so that equal contexts
    /// are equal values and encode to equal bytes), and the replicas are in strictly
    /// increasing order (lookups search them).
    ///
    /// - Complexity: O(*r*) in the number of replicas.
    package func _invariantViolation() -> String? {
        if let zero = entries.first(where: { $0.counter == 0 }) { return "a zero counter for \(zero.replica)" }
        for (before, after) in zip(entries, entries.dropFirst()) where !(before.replica < after.replica) {
            return "\(before.replica) before \(after.replica), not in increasing order"
        }
        return nil
    }
}
