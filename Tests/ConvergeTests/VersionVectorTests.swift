@testable import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Testing

/// A version vector keeps its replicas in a sorted array and searches it. The oracle is a
/// `Dictionary` of counters, with the replicas put in order by comparing their UTF-8 bytes.
@Suite("Version vectors")
struct VersionVectorTests {
    /// Replica IDs whose byte order and length differ: a longer one that shares a prefix,
    /// upper case before lower, digits, an incarnation's.
    static let replicas: [ReplicaID] = ["a", "ab", "b", "phone", "Z.12", "0", "d9", "d10", ReplicaID("phone").incarnation(7)]

    /// One step on a vector and on the oracle.
    enum Step: CustomStringConvertible {
        case raise(ReplicaID, UInt64)
        case increment(ReplicaID)
        case set([ReplicaID: UInt64])
        case union([ReplicaID: UInt64])

        var description: String {
            switch self {
            case .raise(let replica, let counter): return "raise(\(replica), \(counter))"
            case .increment(let replica): return "increment(\(replica))"
            case .set(let counters): return "set(\(counters.sorted { $0.key < $1.key }))"
            case .union(let counters): return "union(\(counters.sorted { $0.key < $1.key }))"
            }
        }
    }

    static func counters(using random: inout Xoshiro256StarStar) -> [ReplicaID: UInt64] {
        var counters: [ReplicaID: UInt64] = [:]
        for _ in 0..<random.next(in: 0...replicas.count) { counters[random.element(of: replicas)] = UInt64(random.next(in: 0...5)) }
        return counters
    }

    static func steps(using random: inout Xoshiro256StarStar) -> [Step] {
        (0..<random.next(in: 0...14)).map { _ in
            switch random.next(below: 4) {
            case 0: return .raise(random.element(of: replicas), UInt64(random.next(in: 0...6)))
            case 1: return .increment(random.element(of: replicas))
            case 2: return .set(counters(using: &random))
            default: return .union(counters(using: &random))
            }
        }
    }

    /// The oracle's vector: non-zero counters only.
    static func normalized(_ counters: [ReplicaID: UInt64]) -> [ReplicaID: UInt64] { counters.filter { $0.value > 0 } }

    /// The oracle's order: by UTF-8 bytes.
    static func ordered(_ counters: [ReplicaID: UInt64]) -> [(replica: ReplicaID, counter: UInt64)] {
        normalized(counters).map { ($0.key, $0.value) }.sorted { Array($0.0.rawValue.utf8).lexicographicallyPrecedes(Array($1.0.rawValue.utf8)) }
    }

    /// Whether every step, on a vector joined by `formUnion`, leaves it equal to the
    /// oracle in every query; the failure, if not.
    static func matchesTheOracle(formUnion: @escaping (inout VersionVector, VersionVector) -> Void = { $0.formUnion($1) },
                                 cases: Int = 2_000) -> PropertyFailure? {
        checkProperty("matchesADictionaryOfCounters", cases: cases, generate: { random -> ([Step], [ReplicaID: UInt64]) in
            (Self.steps(using: &random), Self.counters(using: &random))
        }, shrink: { steps, other in shrinkList(steps).map { ($0, other) } }) { input in
            let (steps, otherCounters) = input
            var vector = VersionVector()
            var oracle: [ReplicaID: UInt64] = [:]
            for step in steps {
                switch step {
                case .raise(let replica, let counter):
                    vector.raise(replica, to: counter)
                    oracle[replica] = max(oracle[replica] ?? 0, counter)
                case .increment(let replica):
                    let dot = vector.increment(replica)
                    oracle[replica, default: 0] += 1
                    if dot != Dot(replica: replica, counter: oracle[replica]!) { return "\(step) gave \(dot)" }
                case .set(let counters):
                    vector.setCounters(counters)
                    oracle.merge(counters) { _, new in new }
                case .union(let counters):
                    formUnion(&vector, VersionVector(counters))
                    oracle.merge(counters) { max($0, $1) }
                }
                oracle = normalized(oracle)
                if let broken = vector._invariantViolation() { return "after \(step): \(broken)" }
            }
            let expected = ordered(oracle)
            let entries = vector.sortedEntries
            guard entries.map(\.replica) == expected.map(\.replica), entries.map(\.counter) == expected.map(\.counter) else {
                return "entries \(vector) != \(expected)"
            }
            for replica in replicas where vector[replica] != oracle[replica] ?? 0 {
                return "vector[\(replica)] = \(vector[replica]), oracle \(oracle[replica] ?? 0)"
            }
            for replica in replicas {
                let counter = oracle[replica] ?? 0
                if vector.contains(Dot(replica: replica, counter: counter + 1)) { return "contains \(replica):\(counter + 1)" }
                if counter > 0 && !vector.contains(Dot(replica: replica, counter: counter)) { return "lacks \(replica):\(counter)" }
            }
            if vector.counterTable != oracle { return "counterTable \(vector.counterTable) != \(oracle)" }
            // The same context built another way (in reverse order, one raise at a time): equal, same hash.
            var rebuilt = VersionVector()
            for (replica, counter) in expected.reversed() { rebuilt.raise(replica, to: counter) }
            if rebuilt != vector || rebuilt.hashValue != vector.hashValue || rebuilt.digest != vector.digest {
                return "rebuilt \(rebuilt) differs from \(vector) (==, hash or digest)"
            }
            let other = VersionVector(otherCounters)
            let otherOracle = normalized(otherCounters)
            let dominated = oracle.allSatisfy { otherOracle[$0.key] ?? 0 >= $0.value }
            if vector.isDominated(by: other) != dominated { return "isDominated(by: \(other)) != \(dominated)" }
            let shared = ordered(oracle.reduce(into: [:]) { $0[$1.key] = min($1.value, otherOracle[$1.key] ?? 0) })
            let intersection = vector.intersection(other).sortedEntries
            if intersection.map(\.replica) != shared.map(\.replica) || intersection.map(\.counter) != shared.map(\.counter) {
                return "intersection with \(other): \(vector.intersection(other))"
            }
            let union = vector.union(other).sortedEntries
            let joined = ordered(oracle.merging(otherOracle) { max($0, $1) })
            if union.map(\.replica) != joined.map(\.replica) || union.map(\.counter) != joined.map(\.counter) {
                return "union with \(other): \(vector.union(other))"
            }
            let raised = otherOracle.filter { $0.value > oracle[$0.key] ?? 0 }
            if vector.raises(toward: other) != raised { return "raises(toward: \(other)) != \(raised)" }
            var changed = raised
            for (replica, counter) in oracle where (otherOracle[replica] ?? 0) < counter { changed[replica] = otherOracle[replica] ?? 0 }
            if vector.changedCounters(toward: other) != changed { return "changedCounters(toward: \(other)) != \(changed)" }
            let same = oracle == otherOracle
            if (vector == other) != same || (same && vector.hashValue != other.hashValue) { return "== \(other) is not \(same)" }
            var writer = BinaryWriter()
            writer.writeVarint(UInt64(expected.count))
            for entry in expected {
                writer.writeString(entry.replica.rawValue)
                writer.writeVarint(entry.counter)
            }
            var encoding = BinaryWriter()
            vector.encode(into: &encoding)
            if encoding.bytes != writer.bytes || vector.encodedSize != writer.bytes.count { return "encoding \(encoding.bytes)" }
            var reader = BinaryReader(writer.bytes)
            if (try? VersionVector(from: &reader)) != vector { return "decoding gave another vector" }
            return nil
        }
    }

    @Test func matchesADictionaryOfCounters() {
        expectHolds(Self.matchesTheOracle())
    }

    /// The property catches a join that appends the other vector's replicas unsorted, by
    /// the order check.
    @Test func catchesAJoinThatAppendsUnsorted() {
        let failure = Self.matchesTheOracle(formUnion: { vector, other in
            // Set directly: a mutating method would trap on the broken order (debug invariants).
            for entry in other.sortedEntries.reversed() {
                if let index = vector.entries.firstIndex(where: { $0.replica == entry.replica }) {
                    vector.entries[index].counter = max(vector.entries[index].counter, entry.counter)
                } else {
                    vector.entries.append(entry)
                }
            }
        }, cases: 500)
        expectCaught(failure)
        #expect(failure?.message.contains("not in increasing order") == true, "\(String(describing: failure))")
    }
}
