/// A causal context: for each replica, the number of its writes incorporated so far.
///
/// `vector[r] == n` means that every dot `r:1…n` has been incorporated, either applied or
/// known to be superseded. A version vector is contiguous and never shrinks. Iteration
/// (``sortedEntries``) is in replica order, so it never leaks `Dictionary` order into
/// encodings or decisions.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    @usableFromInline var counters: [ReplicaID: UInt64]

    /// The empty context: nothing incorporated.
    public init() { counters = [:] }

    /// Creates a context from per-replica counters; zero counters are dropped.
    public init(_ counters: [ReplicaID: UInt64]) {
        self.counters = counters.filter { $0.value > 0 }
    }

    /// The counter of `replica`, 0 if none of its writes has been incorporated.
    @inlinable
    public subscript(replica: ReplicaID) -> UInt64 {
        counters[replica, default: 0]
    }

    /// Whether the write `dot` is incorporated in this context.
    @inlinable
    public func contains(_ dot: Dot) -> Bool {
        // A delta from one writer carries a one-replica context: compare without hashing.
        if counters.count == 1, let only = counters.first {
            return only.key == dot.replica && only.value >= dot.counter
        }
        return counters[dot.replica, default: 0] >= dot.counter
    }

    /// Records the next write of `replica` and returns its dot.
    @discardableResult
    public mutating func increment(_ replica: ReplicaID) -> Dot {
        let next = counters[replica, default: 0] + 1
        counters[replica] = next
        _checkInvariants()
        return Dot(replica: replica, counter: next)
    }

    /// Raises the counter of `replica` to at least `counter`.
    public mutating func raise(_ replica: ReplicaID, to counter: UInt64) {
        guard counter > 0 else { return }
        counters[replica] = max(counters[replica, default: 0], counter)
        _checkInvariants()
    }

    /// Incorporates `dot`, which must be the next write of its replica (one hash lookup).
    mutating func advance(_ dot: Dot) {
        func increment(_ counter: inout UInt64) -> UInt64 {
            counter += 1
            return counter
        }
        let counter = increment(&counters[dot.replica, default: 0])
        precondition(counter == dot.counter, "a planned write must be committed before any other")
        _checkInvariants()
    }

    /// Sets the counter of each replica in `counters` (0 takes the replica out), leaving
    /// every other replica's: how a storage applies ``StorageChange/contextCounters``.
    ///
    /// - Complexity: O(*c*) in the number of counters set, whatever the size of the context.
    public mutating func setCounters(_ counters: [ReplicaID: UInt64]) {
        for (replica, counter) in counters {
            self.counters[replica] = counter == 0 ? nil : counter
        }
        _checkInvariants()
    }

    /// The counters of `other` above this context's: what ``setCounters(_:)`` sets to do
    /// what ``formUnion(_:)`` with `other` does.
    ///
    /// - Complexity: O(*r*), where *r* is the number of replicas in `other`.
    func raises(toward other: VersionVector) -> [ReplicaID: UInt64] {
        var raised: [ReplicaID: UInt64] = [:]
        for (replica, counter) in other.counters where counter > counters[replica, default: 0] {
            raised[replica] = counter
        }
        return raised
    }

    /// The counters that differ in `other`, with its values (0 for a replica it lacks): what
    /// ``setCounters(_:)`` sets to turn this context into `other`.
    ///
    /// - Complexity: O(*r*) in the replicas of both.
    func changedCounters(toward other: VersionVector) -> [ReplicaID: UInt64] {
        var changed = raises(toward: other)
        for (replica, counter) in counters where other[replica] < counter {
            changed[replica] = other[replica]
        }
        return changed
    }

    /// A 64-bit FNV-1a digest of the canonical encoding: equal contexts have equal
    /// digests on every platform.
    public var digest: UInt64 {
        var writer = BinaryWriter()
        encode(into: &writer)
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in writer.bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }

    /// Takes the pointwise maximum with `other` (the join of contexts).
    ///
    /// - Complexity: O(*r*), where *r* is the number of replicas in `other`.
    public mutating func formUnion(_ other: VersionVector) {
        for (replica, counter) in other.counters where counter > counters[replica, default: 0] {
            counters[replica] = counter
        }
        _checkInvariants()
    }

    /// The pointwise maximum of two contexts.
    public func union(_ other: VersionVector) -> VersionVector {
        var result = self
        result.formUnion(other)
        return result
    }

    /// The pointwise minimum of two contexts: what both have incorporated.
    public func intersection(_ other: VersionVector) -> VersionVector {
        var result = VersionVector()
        for (replica, counter) in counters {
            let shared = min(counter, other[replica])
            if shared > 0 { result.counters[replica] = shared }
        }
        return result
    }

    /// Whether every write incorporated here is also incorporated in `other`.
    public func isDominated(by other: VersionVector) -> Bool {
        counters.allSatisfy { other[$0.key] >= $0.value }
    }

    /// The replicas with a non-zero counter, with their counters, in replica order.
    public var sortedEntries: [(replica: ReplicaID, counter: UInt64)] {
        counters.map { (replica: $0.key, counter: $0.value) }.sorted { $0.replica < $1.replica }
    }

    /// The non-zero counters by replica, unordered: for a storage that hands the whole
    /// context over as a ``StorageChange``, or to build another vector (whose entries do not
    /// depend on the order they were raised in). Never iterate it into an encoding or a
    /// decision that depends on the order.
    package var counterTable: [ReplicaID: UInt64] { counters }

    /// The number of replicas with a non-zero counter.
    public var count: Int { counters.count }

    /// Whether no write is incorporated.
    public var isEmpty: Bool { counters.isEmpty }

    public var description: String {
        "[" + sortedEntries.map { "\($0.replica):\($0.counter)" }.joined(separator: ", ") + "]"
    }
}
