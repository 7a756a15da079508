/// A causal context: for each replica, the number of its writes incorporated so far.
///
/// `vector[r] == n` means that every dot `r:1…n` has been incorporated, either applied or
/// known to be superseded. A version vector is contiguous and never shrinks. Iteration
/// (``sortedEntries``) is in replica order, so it never leaks `Dictionary` order into
/// encodings or decisions.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    /// The replicas with a non-zero counter, in replica order: a lookup is a binary search
    /// (a few string comparisons where a device knows a few replicas, about 11 at a hub's
    /// 1,540) instead of hashing a string, a join walks both vectors once, and the encoding
    /// needs no sort.
    @usableFromInline var entries: [(replica: ReplicaID, counter: UInt64)]

    /// The empty context: nothing incorporated.
    public init() { entries = [] }

    /// Creates a context from per-replica counters; zero counters are dropped.
    ///
    /// - Complexity: O(*r* log *r*) in the replicas given.
    public init(_ counters: [ReplicaID: UInt64]) {
        entries = counters.filter { $0.value > 0 }.map { (replica: $0.key, counter: $0.value) }.sorted { $0.replica < $1.replica }
    }

    /// Entries already in strictly increasing replica order, with non-zero counters.
    init(sorted entries: [(replica: ReplicaID, counter: UInt64)]) {
        self.entries = entries
        _checkInvariants()
    }

    /// Where `replica` is in ``entries``, or where it would be inserted.
    @inlinable
    func position(of replica: ReplicaID) -> (index: Int, found: Bool) {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            let other = entries[middle].replica
            if other == replica { return (middle, true) }
            if other < replica { low = middle + 1 } else { high = middle }
        }
        return (low, false)
    }

    /// The counter of `replica`, 0 if none of its writes has been incorporated.
    ///
    /// - Complexity: O(log *r*) in the replicas of this context.
    @inlinable
    public subscript(replica: ReplicaID) -> UInt64 {
        let (index, found) = position(of: replica)
        return found ? entries[index].counter : 0
    }

    /// Whether the write `dot` is incorporated in this context.
    @inlinable
    public func contains(_ dot: Dot) -> Bool {
        self[dot.replica] >= dot.counter
    }

    /// Sets the counter of `replica` (0 takes it out).
    mutating func set(_ replica: ReplicaID, to counter: UInt64) {
        let (index, found) = position(of: replica)
        switch (found, counter) {
        case (true, 0): entries.remove(at: index)
        case (true, _): entries[index].counter = counter
        case (false, 0): break
        case (false, _): entries.insert((replica, counter), at: index)
        }
    }

    /// Records the next write of `replica` and returns its dot.
    @discardableResult
    public mutating func increment(_ replica: ReplicaID) -> Dot {
        let (index, found) = position(of: replica)
        let next: UInt64
        if found {
            next = entries[index].counter + 1
            entries[index].counter = next
        } else {
            next = 1
            entries.insert((replica, next), at: index)
        }
        _checkInvariants()
        return Dot(replica: replica, counter: next)
    }

    /// Raises the counter of `replica` to at least `counter`.
    public mutating func raise(_ replica: ReplicaID, to counter: UInt64) {
        let (index, found) = position(of: replica)
        if found {
            if counter > entries[index].counter { entries[index].counter = counter }
        } else if counter > 0 {
            entries.insert((replica, counter), at: index)
        }
        _checkInvariants()
    }

    /// Incorporates `dot`, which must be the next write of its replica (one search).
    mutating func advance(_ dot: Dot) {
        let (index, found) = position(of: dot.replica)
        if found {
            entries[index].counter += 1
            precondition(entries[index].counter == dot.counter, "a planned write must be committed before any other")
        } else {
            precondition(dot.counter == 1, "a planned write must be committed before any other")
            entries.insert((dot.replica, 1), at: index)
        }
        _checkInvariants()
    }

    /// Sets the counter of each replica in `counters` (0 takes the replica out), leaving
    /// every other replica's: how a storage applies ``StorageChange/contextCounters``.
    ///
    /// - Complexity: O(*c* log *r*) for *c* counters set in a context of *r* replicas, plus
    ///   moving the replicas after one added or taken out.
    public mutating func setCounters(_ counters: [ReplicaID: UInt64]) {
        for (replica, counter) in counters { set(replica, to: counter) }
        _checkInvariants()
    }

    /// The counters of `other` above this context's: what ``setCounters(_:)`` sets to do
    /// what ``formUnion(_:)`` with `other` does.
    ///
    /// - Complexity: O(*r*) in the replicas of both; for an `other` of few replicas (a
    ///   delta from one writer), O(*o* log *r*) in its replicas, whatever the size of this one.
    func raises(toward other: VersionVector) -> [ReplicaID: UInt64] {
        var raised: [ReplicaID: UInt64] = [:]
        if other.isSmall(beside: self) {
            for (replica, counter) in other.entries where counter > self[replica] { raised[replica] = counter }
            return raised
        }
        Self.walk(self, other) { replica, mine, theirs in
            if theirs > mine { raised[replica] = theirs }
        }
        return raised
    }

    /// Whether searching `other` for each of this vector's replicas costs less than walking
    /// both: this one has at most two replicas, or far fewer than `other`.
    @inline(__always)
    func isSmall(beside other: VersionVector) -> Bool {
        entries.count <= 2 || entries.count * 16 < other.entries.count
    }

    /// The counters that differ in `other`, with its values (0 for a replica it lacks): what
    /// ``setCounters(_:)`` sets to turn this context into `other`.
    ///
    /// - Complexity: O(*r*) in the replicas of both.
    func changedCounters(toward other: VersionVector) -> [ReplicaID: UInt64] {
        var changed: [ReplicaID: UInt64] = [:]
        Self.walk(self, other) { replica, mine, theirs in
            if theirs != mine { changed[replica] = theirs }
        }
        return changed
    }

    /// Calls `body` with each replica of `a` or `b`, in replica order, and its counter in
    /// each (0 where it has none).
    @inline(__always)
    static func walk(_ a: VersionVector, _ b: VersionVector, _ body: (ReplicaID, UInt64, UInt64) -> Void) {
        var i = 0, j = 0
        let left = a.entries, right = b.entries
        while i < left.count || j < right.count {
            // Equality first: vectors of one account mostly name the same replicas, and two
            // equal short IDs compare as two machine words (IDs of up to 15 bytes are held
            // inline), where ordering them costs two calls into the string comparison.
            if i < left.count && j < right.count && left[i].replica == right[j].replica {
                body(left[i].replica, left[i].counter, right[j].counter)
                i += 1
                j += 1
            } else if j == right.count || (i < left.count && left[i].replica < right[j].replica) {
                body(left[i].replica, left[i].counter, 0)
                i += 1
            } else {
                body(right[j].replica, 0, right[j].counter)
                j += 1
            }
        }
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
    /// - Complexity: O(*r*) in the replicas of both; for an `other` of few replicas (a delta
    ///   from one writer), a search each, plus moving the replicas after one added.
    public mutating func formUnion(_ other: VersionVector) {
        if other.isSmall(beside: self) {
            // A delta from one writer: a search each, no new array.
            for entry in other.entries { raise(entry.replica, to: entry.counter) }
            return
        }
        if entries.isEmpty {
            entries = other.entries
            return
        }
        var joined: [(replica: ReplicaID, counter: UInt64)] = []
        joined.reserveCapacity(max(entries.count, other.entries.count))
        Self.walk(self, other) { replica, mine, theirs in joined.append((replica, max(mine, theirs))) }
        entries = joined
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
        var shared: [(replica: ReplicaID, counter: UInt64)] = []
        Self.walk(self, other) { replica, mine, theirs in
            if min(mine, theirs) > 0 { shared.append((replica, min(mine, theirs))) }
        }
        return VersionVector(sorted: shared)
    }

    /// Whether every write incorporated here is also incorporated in `other`.
    public func isDominated(by other: VersionVector) -> Bool {
        guard entries.count <= other.entries.count else { return false }
        if entries.count == other.entries.count && sharesStorage(with: other) { return true }
        var j = 0
        let right = other.entries
        for entry in entries {
            // Equality first, as in `walk`.
            while j < right.count && right[j].replica != entry.replica && right[j].replica < entry.replica { j += 1 }
            guard j < right.count, right[j].replica == entry.replica, right[j].counter >= entry.counter else { return false }
            j += 1
        }
        return true
    }

    /// The replicas with a non-zero counter, with their counters, in replica order.
    public var sortedEntries: [(replica: ReplicaID, counter: UInt64)] { entries }

    /// The non-zero counters by replica, unordered: for a storage that hands the whole
    /// context over as a ``StorageChange``, or to build another vector (whose entries do not
    /// depend on the order they were raised in). Never iterate it into an encoding or a
    /// decision that depends on the order.
    package var counterTable: [ReplicaID: UInt64] {
        Dictionary(uniqueKeysWithValues: entries.lazy.map { ($0.replica, $0.counter) })
    }

    /// The number of replicas with a non-zero counter.
    public var count: Int { entries.count }

    /// Whether no write is incorporated.
    public var isEmpty: Bool { entries.isEmpty }

    // Written out because tuples cannot be `Equatable`: entries are in canonical form
    // (sorted, no zero counter), so equal contexts have equal entries, element by element.
    // Copies of one vector share their entries' storage, and are equal without a look at them.
    public static func == (lhs: VersionVector, rhs: VersionVector) -> Bool {
        lhs.entries.count == rhs.entries.count
            && (lhs.sharesStorage(with: rhs)
                || zip(lhs.entries, rhs.entries).allSatisfy { $0.replica == $1.replica && $0.counter == $1.counter })
    }

    /// Whether this vector's entries are stored where `other`'s are (one is a copy of the other).
    @inline(__always)
    func sharesStorage(with other: VersionVector) -> Bool {
        entries.withUnsafeBufferPointer { mine in other.entries.withUnsafeBufferPointer { mine.baseAddress == $0.baseAddress } }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(entries.count)
        for entry in entries {
            hasher.combine(entry.replica)
            hasher.combine(entry.counter)
        }
    }

    public var description: String {
        "[" + sortedEntries.map { "\($0.replica):\($0.counter)" }.joined(separator: ", ") + "]"
    }
}
