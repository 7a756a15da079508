@testable import Converge
import Foundation
import Testing

/// A large array or dictionary that arrives as bytes stays in its encoding until it is
/// read, so memory follows the bytes received, not the number of elements: the issue
/// "Hostile and damaged input changes nothing and crashes nothing" measured 465 MB to sync
/// a valid 16.7 MB file of booleans, and 447 MB for every later read of another key.
@Suite struct LargeValueTests {
    static let stamp = HybridTimestamp(wallMilliseconds: 1_700_000_000_000, logical: 0)

    /// A delta from replica "peer" writing each of `values` under the keys "k0", "k1", …
    static func delta(_ values: [Value?]) -> ReplicatedMap.Delta {
        var map = ReplicatedMap()
        for (index, value) in values.enumerated() {
            map.write(.string("placeholder"), forKey: "k\(index)", replica: "peer", timestamp: stamp)
            if value == nil { map.write(nil, forKey: "k\(index)", replica: "peer", timestamp: stamp) }
            else { map.write(value, forKey: "k\(index)", replica: "peer", timestamp: stamp) }
        }
        return map.asDelta
    }

    static let bools = Value.array((0..<200_000).map { .bool($0 % 3 == 0) })
    static let members = Value.dictionary(Dictionary(uniqueKeysWithValues: (0..<300).map { ("member \($0)", Value.integer(Int64($0))) }))

    @Test func aLargeArrayOrDictionaryReadFromBytesIsKeptEncodedAndReadsBackEqual() throws {
        let small: Value = [1, 2, "three"]
        let text = Value.string(String(repeating: "x", count: 5_000))
        let original = Self.delta([Self.bools, Self.members, small, text, nil])
        let bytes = original.encoded()
        let decoded = try ReplicatedMap.Delta(encoded: bytes)
        let held = (0..<5).map { decoded.entries["k\($0)"]!.last! }
        // Arrays and dictionaries of 1 KiB or more stay encoded; small ones, strings and
        // removals are decoded as before.
        #expect(held.map(\.keepsValueEncoded) == [true, true, false, false, false])
        #expect(held[0].value == Self.bools)
        #expect(held[1].value == Self.members)
        #expect(held[4].isTombstone && held[4].value == nil && held[4].valueSizeBytes == 0)
        // Sizes, equality and encoding never need the decoded value, and agree with it.
        #expect(held[0].valueSizeBytes == Self.bools.encodedSize)
        #expect(held[0] == original.entries["k0"]!.last!)
        #expect(held[0].hashValue == original.entries["k0"]!.last!.hashValue)
        #expect(decoded == original)
        #expect(decoded.encoded() == bytes)
        // A sibling with the same dot but another value is not equal, however it is held.
        var changed = held[0]
        changed.value = .array([.bool(true)])
        #expect(changed != held[0] && !changed.holdsTheSameValue(as: held[0]))
        #expect(held[0].description.contains("\(Self.bools.encodedSize) encoded bytes"))
    }

    @Test func damageInsideALargeValueIsRefusedWhenItArrivesNotWhenItIsRead() throws {
        // Each is a large array with one bad element at its end, where only checking every
        // element finds it.
        func delta(withLastElement tail: [UInt8]) -> [UInt8] {
            var writer = BinaryWriter()
            VersionVector(["peer": 1]).encode(into: &writer)
            writer.writeVarint(1)
            writer.writeString("k")
            writer.writeVarint(1)
            writer.writeVarint(0)
            writer.writeVarint(1)
            Self.stamp.encode(into: &writer)
            writer.writeByte(1)
            writer.writeByte(8)  // array
            writer.writeVarint(2_001)
            for _ in 0..<2_000 { writer.writeByte(5) }  // true
            writer.writeRaw(tail)
            return writer.bytes
        }
        func refusal(_ bytes: [UInt8]) -> String? {
            do { _ = try ReplicatedMap.Delta(encoded: bytes); return nil } catch { return "\(error)" }
        }
        #expect(try ReplicatedMap.Delta(encoded: delta(withLastElement: [4])).entries["k"]![0].keepsValueEncoded)
        let nan = [UInt8(3)] + withUnsafeBytes(of: Double.nan.bitPattern.littleEndian, Array.init)
        #expect(refusal(delta(withLastElement: nan))?.contains("NaN") == true)
        #expect(refusal(delta(withLastElement: [42]))?.contains("unknown value tag 42") == true)
        #expect(refusal(delta(withLastElement: [1, 2, 0xFF, 0xFE]))?.contains("UTF-8") == true)
        #expect(refusal(delta(withLastElement: [8, 1])) != nil)  // an array cut short
        #expect(refusal(delta(withLastElement: [5, 5])) != nil)  // a trailing byte
        var deep: [UInt8] = []
        for _ in 0...Value.maximumNestingDepth { deep += [8, 1] }
        #expect(refusal(delta(withLastElement: deep + [5]))?.contains("nest deeper") == true)
        // One text spelled two ways is one dictionary key to Swift: refused even unbuilt.
        var twice: [UInt8] = [9, 2]
        for key in ["e\u{301}", "\u{E9}"] { twice += [UInt8(key.utf8.count)] + Array(key.utf8) + [5] }
        #expect(refusal(delta(withLastElement: twice))?.contains("duplicate dictionary key") == true)
    }

    @Test func aStoreTakesAPeersLargeArrayAndReportsItWithoutDecodingItForOtherKeys() throws {
        let store = ReplicatedKeyValueStore(replicaID: "mine", quota: Quota(maximumKeyCount: 10, maximumTotalValueBytes: 1_000_000,
                                                                          maximumValueBytes: 1_000_000, maximumKeyBytes: 64))
        try store.setValue("x", forKey: "mine")
        let events = EventLog()
        let token = store.observe { events.append($0) }
        let arriving = try ReplicatedMap.Delta(encoded: Self.delta([Self.bools]).encoded())
        #expect(try store.merge(arriving) == ["k0"])
        #expect(store.siblings(forKey: "k0").map(\.keepsValueEncoded) == [true])
        #expect(store.value(forKey: "k0") == Self.bools)
        #expect(store.value(forKey: "mine") == "x")
        // The same write arriving again changes nothing and reports nothing.
        #expect(try store.merge(try ReplicatedMap.Delta(encoded: Self.delta([Self.bools]).encoded())) == [])
        #expect(events.changes.map(\.keys) == [["k0"]] && events.all.count == 1)
        token.cancel()
    }

    /// Change detection compares siblings, not decoded values; a removal that wins over a
    /// live sibling must still count as no value (a review found merges reporting a key
    /// whose read stayed absent under these policies).
    @Test(arguments: [MergePolicy.lastWriterWins, .removeWins, .replicaPriority(["b", "a"])])
    func aMergeThatLeavesAKeyAbsentReportsNoChange(policy: MergePolicy) {
        func stamp(_ wall: UInt64) -> HybridTimestamp { HybridTimestamp(wallMilliseconds: wall, logical: 0) }
        let write = Sibling(dot: Dot(replica: "a", counter: 1), timestamp: stamp(1), value: "x")
        let removal = Sibling(dot: Dot(replica: "b", counter: 2), timestamp: stamp(2), value: nil)
        let later = Sibling(dot: Dot(replica: "b", counter: 3), timestamp: stamp(3), value: nil)
        #expect(!ReplicatedMap.visibleValuesDiffer([write, removal], [later], policy: policy))
        #expect(!ReplicatedMap.visibleValuesDiffer([removal], [write, removal], policy: policy))
        #expect(ReplicatedMap.visibleValuesDiffer([write], [write, removal], policy: policy))
        #expect(ReplicatedMap.visibleValuesDiffer([], [write], policy: policy))
        #expect(!ReplicatedMap.visibleValuesDiffer([], [removal], policy: policy))
    }
}
