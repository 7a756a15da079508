/// Computes the frontier below which tombstones may be collected, from the contexts the
/// members of a replica group have acknowledged.
///
/// The pointwise minimum `F` of the acknowledged contexts says what *everyone* has
/// incorporated. That alone is not enough to drop a tombstone `T` in `F`: a member may
/// still hold a value written concurrently with `T` that another member has never seen.
/// The member that drops `T` would later receive that value alone, while the holder keeps
/// `[T, value]`, and no delta would ever reconcile them. Every write concurrent with `T`
/// was made by its writer before it incorporated `T`, so its counter is at most the
/// writer's own counter `M[w]` in the acknowledgement that yielded `F`. Once a later
/// minimum covers that `M`, every member knows every such write, and `F` is safe.
///
/// So the tracker remembers candidate pairs `(F, M)` and reports as the safe frontier
/// the latest `F` whose `M` the current minimum covers: two rounds of acknowledgements,
/// which makes progress under continuous writes.
public struct StabilityTracker: Hashable, Sendable {
    /// The most candidates remembered; older ones are dropped first (newer candidates
    /// supersede them anyway).
    public static let maximumCandidates = 64

    // Module-internal rather than private, so that tests can break a tracker on purpose
    // and show that `_checkInvariants()` catches it.
    var candidates: [Candidate] = []

    /// The latest frontier known to be safe for collection. Never shrinks.
    public internal(set) var safeFrontier = VersionVector()

    struct Candidate: Hashable, Sendable {
        var frontier: VersionVector
        var witnessed: VersionVector
    }

    /// Creates a tracker that knows of no acknowledgement yet: nothing is stable.
    public init() {}

    /// Records one round of acknowledgements, one per member, and returns the safe frontier.
    ///
    /// - Parameter acknowledged: Each member's acknowledged context. Must list every
    ///   member: a missing one would make the minimum too high.
    /// - Complexity: O(*m* · *r* · (*c* + log *r*)) for *m* members, *r* replicas per context
    ///   and *c* remembered candidates.
    @discardableResult
    public mutating func observe(acknowledged: [ReplicaID: VersionVector]) -> VersionVector {
        guard let first = acknowledged.first else { return safeFrontier }
        // One pass per replica of the first context, so no intermediate vectors are built.
        var lowest: [ReplicaID: UInt64] = [:]
        replicas: for (replica, counter) in first.value.entries {
            var low = counter
            for context in acknowledged.values {
                low = min(low, context[replica])
                if low == 0 { continue replicas }
            }
            lowest[replica] = low
        }
        var witnessed: [ReplicaID: UInt64] = [:]
        for (member, context) in acknowledged where context[member] > 0 { witnessed[member] = context[member] }
        return observe(minimum: VersionVector(lowest), witnessed: VersionVector(witnessed))
    }

    /// Records one round of acknowledgements given as what it comes to: their pointwise
    /// minimum, and what each member acknowledged of its own writes. Returns the safe
    /// frontier, as ``observe(acknowledged:)`` does for the round itself.
    ///
    /// - Complexity: O(*r* · *c*) for *r* replicas and *c* remembered candidates.
    @discardableResult
    mutating func observe(minimum: VersionVector, witnessed witnessedVector: VersionVector) -> VersionVector {
        // The newest candidate whose witnessed writes everyone now knows becomes safe.
        // Candidates are in the order they were made, so the covered ones form a prefix in
        // practice; taking the end of the covered prefix is safe (any covered candidate is)
        // and usually costs one or two comparisons instead of a scan of every candidate.
        var covered = 0
        while covered < candidates.count && candidates[covered].witnessed.isDominated(by: minimum) { covered += 1 }
        if covered > 0 {
            let index = covered - 1
            safeFrontier.formUnion(candidates[index].frontier)
            candidates.removeFirst(index + 1)
        }
        if candidates.last?.frontier != minimum || candidates.last?.witnessed != witnessedVector {
            candidates.append(Candidate(frontier: minimum, witnessed: witnessedVector))
            if candidates.count > Self.maximumCandidates { candidates.removeFirst() }
        }
        // A round that is already quiescent (everyone has everyone's writes) is safe at once.
        if witnessedVector.isDominated(by: minimum) { safeFrontier.formUnion(minimum) }
        _checkInvariants()
        return safeFrontier
    }
}
