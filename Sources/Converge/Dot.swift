/// The unique identity of one write: the replica that made it and that replica's
/// counter at the time (counters start at 1).
///
/// Dots order by replica, then counter; that is the canonical order in which siblings
/// are kept and handed to merge policies.
public struct Dot: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The replica that made the write.
    public var replica: ReplicaID
    /// The replica's write counter, at least 1.
    public var counter: UInt64

    /// The largest counter a replica issues or accepts (2^62).
    ///
    /// Decoding refuses a context or dot above it, and so does a store merging a delta, so
    /// a peer can never raise a counter to where the next write would overflow; a replica
    /// would need 2^62 writes of its own to reach it.
    public static let maximumCounter: UInt64 = 1 << 62

    /// Creates the dot of write number `counter` (at least 1) of `replica`.
    public init(replica: ReplicaID, counter: UInt64) {
        precondition(counter >= 1, "dot counters start at 1")
        self.replica = replica
        self.counter = counter
    }

    public static func < (lhs: Dot, rhs: Dot) -> Bool {
        if lhs.replica != rhs.replica { return lhs.replica < rhs.replica }
        return lhs.counter < rhs.counter
    }

    public var description: String { "\(replica):\(counter)" }
}
