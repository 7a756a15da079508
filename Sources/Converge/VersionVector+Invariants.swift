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
    /// are equal values and encode to equal bytes).
    ///
    /// - Complexity: O(*r*) in the number of replicas.
    package func _invariantViolation() -> String? {
        guard counters.values.contains(0) else { return nil }
        return "a zero counter for \(counters.filter { $0.value == 0 }.keys.sorted()[0])"
    }
}
