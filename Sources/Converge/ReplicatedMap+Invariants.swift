extension ReplicatedMap {
    /// Traps if a structural invariant is broken, naming it: in debug builds only, so
    /// release builds pay nothing. Called after every mutation (swift-collections' habit),
    /// so a broken state stops where it was made instead of travelling to other replicas.
    @inline(__always)
    package func _checkInvariants() {
        #if DEBUG
        if let violation = _invariantViolation() { preconditionFailure("ReplicatedMap invariant broken: \(violation)") }
        #endif
    }

    /// The first broken invariant, described, or `nil` if all hold. Compiled in every
    /// configuration, for tests and checkers that report instead of trapping.
    ///
    /// The invariants: no key is empty; every key has at least one sibling; siblings are in
    /// strictly increasing dot order; the context covers every sibling's dot; the context
    /// holds its own invariants; ``usage`` is what the live siblings add up to; the dot index
    /// has at least one entry per sibling.
    ///
    /// - Parameter clock: If given, every sibling's timestamp must be at or before it (the
    ///   owner's hybrid logical clock has observed every write it holds). Checked in the
    ///   same pass, because the check runs after every mutation in debug builds.
    /// - Complexity: O(*n*) in the number of siblings.
    package func _invariantViolation(clockAtLeast clock: HybridTimestamp? = nil) -> String? {
        if let violation = context._invariantViolation() { return "context: \(violation)" }
        var live = QuotaUsage()
        for (key, siblings) in entries where entryViolation(key, siblings, clockAtLeast: clock, adding: &live) != nil {
            // Name the first broken key in byte order, never in Dictionary order, so the
            // message is the same in every process.
            for key in entries.keys.sortedByUTF8() {
                if let violation = entryViolation(key, entries[key]!, clockAtLeast: clock, adding: &live) { return violation }
            }
        }
        if live != usage { return "usage \(usage) does not match the entries (\(live))" }
        // The dot index's completeness costs a set to check (``_dotIndexViolation()``); its
        // size is checked here, because ``delta(for:)`` depends on the count to stay small.
        let siblingCount = entries.values.reduce(0) { $0 + $1.count }
        if siblingCount != _siblingCount { return "the sibling count \(_siblingCount) does not match the entries (\(siblingCount))" }
        if _dotIndex.count < siblingCount { return "the dot index holds \(_dotIndex.count) entries for \(siblingCount) siblings" }
        return usage._invariantViolation().map { "usage: \($0)" }
    }

    /// What is wrong with one key's siblings, if anything; adds what they count against a
    /// quota to `live`.
    private func entryViolation(_ key: String, _ siblings: [Sibling], clockAtLeast clock: HybridTimestamp?,
                                adding live: inout QuotaUsage) -> String? {
        if key.isEmpty { return "an empty key" }
        if siblings.isEmpty { return "key \"\(key)\" has an empty sibling list" }
        var isLive = false
        for index in siblings.indices {
            let sibling = siblings[index]
            if !context.contains(sibling.dot) {
                return "sibling \(sibling.dot) of \"\(key)\" is not covered by the context \(context)"
            }
            if index > 0, !(siblings[index - 1].dot < sibling.dot) {
                return "siblings of \"\(key)\" are not in strictly increasing dot order"
            }
            if let clock, sibling.timestamp > clock {
                return "the clock \(clock) is behind \(sibling.dot) of \"\(key)\" (\(sibling.timestamp))"
            }
            if !sibling.isTombstone {
                isLive = true
                live.valueBytes += sibling.valueSizeBytes
            }
        }
        if isLive { live.keyCount += 1 }
        return nil
    }
}
