@testable import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Foundation
import Testing

/// A storage writes one record per key it changes, encoded by
/// `ReplicatedMap.Delta.encodedEntry` without building a delta. The oracle is the general
/// encoder: the delta of that one key, with the context its siblings' dots cover.
@Suite("One key's record")
struct EntryEncodingTests {
    static func siblings(using random: inout Xoshiro256StarStar) -> [Sibling] {
        // Replica IDs whose byte order and length differ (a longer one that shares a prefix,
        // upper case before lower), an incarnation's, and more siblings than the short path takes.
        let replicas: [ReplicaID] = ["a", "ab", "b", "phone", "Z.12", "0", ReplicaID("phone").incarnation(7)]
        let values: [Value?] = [nil, .string(""), .string("value"), .integer(-7), .data(Data([0, 255])), .string(String(repeating: "x", count: 300))]
        return (0..<Int.random(in: 0...12, using: &random)).map { _ in
            Sibling(dot: Dot(replica: replicas.randomElement(using: &random)!, counter: UInt64.random(in: 1...300, using: &random)),
                    timestamp: HybridTimestamp(wallMilliseconds: UInt64.random(in: 0...1 << 45, using: &random), logical: UInt32.random(in: 0...3, using: &random)),
                    value: values.randomElement(using: &random)!)
        }
    }

    /// Whether `encode` writes, for every generated key and siblings, the bytes of the
    /// one-key delta; the failure, if not.
    static func matchesTheDelta(_ encode: @escaping (String, [Sibling]) -> [UInt8], cases: Int = 2_000) -> PropertyFailure? {
        checkProperty("isTheDeltaOfThatKeyEncoded", cases: cases, generate: { random -> (String, [Sibling]) in
            (UTF8OrderTests.text(using: &random) + "k", Self.siblings(using: &random))
        }, shrink: { key, siblings in shrinkList(siblings).map { (key, $0) } }) { input in
            let (key, siblings) = input
            var context = VersionVector()
            for sibling in siblings { context.raise(sibling.dot.replica, to: sibling.dot.counter) }
            let expected = ReplicatedMap.Delta(entries: [key: siblings], context: context).encoded()
            let encoded = encode(key, siblings)
            return encoded == expected ? nil : "\(encoded) != \(expected)"
        }
    }

    @Test func isTheDeltaOfThatKeyEncoded() {
        expectHolds(Self.matchesTheDelta { ReplicatedMap.Delta.encodedEntry(forKey: $0, siblings: $1) })
    }

    /// The property catches an encoder that writes the siblings in another order.
    @Test func catchesSiblingsWrittenInAnotherOrder() {
        expectCaught(Self.matchesTheDelta({ ReplicatedMap.Delta.encodedEntry(forKey: $0, siblings: $1.reversed()) }, cases: 200))
    }
}
