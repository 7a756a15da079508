extension ReplicatedKeyValueStore.State {
    /// Traps if an invariant is broken, in debug builds only; release builds pay nothing.
    /// Called with the lock held, after every change a store makes to its state.
    @inline(__always)
    func _checkInvariants() {
        #if DEBUG
        if let violation = _invariantViolation() { preconditionFailure("ReplicatedKeyValueStore invariant broken: \(violation)") }
        #endif
    }

    /// The first broken invariant, described, or `nil` if all hold: the replicated state
    /// holds its own invariants, and the hybrid logical clock is at or past every
    /// timestamp in it. A clock behind a timestamp it holds would stamp the next local
    /// write before a value it has already shown, and last-writer-wins would then drop
    /// that write on every replica without anyone noticing.
    ///
    /// - Complexity: O(*n*) in the number of siblings.
    func _invariantViolation() -> String? {
        map._invariantViolation(clockAtLeast: clock.latest)
    }
}

extension ReplicatedKeyValueStore {
    /// Traps if an invariant of the store's state is broken, in debug builds only. The
    /// simulator calls it after every step; the store itself after every change.
    package func _checkInvariants() {
        #if DEBUG
        state.withLock { $0._checkInvariants() }
        #endif
    }

    /// The first broken invariant of the store's state, described, or `nil` if all hold.
    package func _invariantViolation() -> String? {
        state.withLock { $0._invariantViolation() }
    }
}
