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

    private var candidates: [Candidate] = []
    /// The latest frontier known to be safe for collection. Never shrinks.
    public private(set) var safeFrontier = VersionVector()

    private struct Candidate: Hashable, Sendable {
        var frontier: VersionVector
        var witnessed: VersionVector
    }

    public init() {}

    /// Records one round of acknowledgements, one per member, and returns the safe frontier.
    ///
    /// - Parameter acknowledged: Each member's acknowledged context. Must list every
    ///   member: a missing one would make the minimum too high.
    /// - Complexity: O(*m* · *r* · *c*) for *m* members, *r* replicas per context and *c*
    ///   remembered candidates.
    @discardableResult
    public mutating func observe(acknowledged: [ReplicaID: VersionVector]) -> VersionVector {
        guard let first = acknowledged.first else { return safeFrontier }
        var minimum = first.value
        var witnessed = VersionVector()
        for (member, context) in acknowledged {
            minimum = minimum.intersection(context)
            witnessed.raise(member, to: context[member])
        }
        // The newest candidate whose witnessed writes everyone now knows becomes safe.
        if let index = candidates.lastIndex(where: { $0.witnessed.isDominated(by: minimum) }) {
            safeFrontier.formUnion(candidates[index].frontier)
            candidates.removeFirst(index + 1)
        }
        if candidates.last?.frontier != minimum || candidates.last?.witnessed != witnessed {
            candidates.append(Candidate(frontier: minimum, witnessed: witnessed))
            if candidates.count > Self.maximumCandidates { candidates.removeFirst() }
        }
        // A round that is already quiescent (everyone has everyone's writes) is safe at once.
        if witnessed.isDominated(by: minimum) { safeFrontier.formUnion(minimum) }
        return safeFrontier
    }
}
