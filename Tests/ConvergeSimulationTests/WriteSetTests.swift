import Converge
@testable import ConvergeSimulation
import Testing

/// The reference model's write sets against plain sets: the compact form (a complete prefix
/// counted, not stored) must answer exactly as the whole sets did.
@Suite("Write sets")
struct WriteSetTests {
    /// A set like the model's: every number below a point, less a few, and a few beyond.
    static func randomSet(_ random: inout Xoshiro256StarStar, limit: Int) -> Set<Int> {
        let prefix = Int.random(in: 0...limit, using: &random)
        var result = Set(0..<prefix)
        for _ in 0..<Int.random(in: 0...3, using: &random) where prefix > 0 { result.remove(Int.random(in: 0..<prefix, using: &random)) }
        for _ in 0..<Int.random(in: 0...20, using: &random) { result.insert(Int.random(in: 0..<limit + 130, using: &random)) }
        return result
    }

    @Test("set operations agree with Set<Int>", arguments: 0..<200)
    func setOperationsAgreeWithPlainSets(seed: UInt64) {
        var random = Xoshiro256StarStar(seed: seed)
        let limit = [10, 64, 200, 700][Int(seed % 4)]
        let a = Self.randomSet(&random, limit: limit), b = Self.randomSet(&random, limit: limit)
        let left = WriteSet(a.sorted()), right = WriteSet(b.sorted().reversed())
        #expect(left.members == a.sorted(), "seed \(seed)")
        #expect(left.isEmpty == a.isEmpty)
        #expect((0..<limit + 200).allSatisfy { left.contains($0) == a.contains($0) }, "seed \(seed)")
        #expect((0..<left.completeCount).allSatisfy { a.contains($0) })
        #expect(left.membersBeyondCompletePrefix == a.filter { $0 >= left.completeCount }.sorted())
        #expect(left.union(right).members == a.union(b).sorted(), "seed \(seed)")
        #expect(left.union(right) == WriteSet(a.union(b)))
        #expect(left.intersection(right).members == a.intersection(b).sorted(), "seed \(seed)")
        #expect(left.intersection(right) == WriteSet(a.intersection(b)))
        #expect(left.members(notIn: right) == a.subtracting(b).sorted(), "seed \(seed)")
        #expect(left.filter { $0 % 3 == 0 }.members == a.filter { $0 % 3 == 0 }.sorted())
        #expect((left == right) == (a == b))
        #expect(left == WriteSet(a.shuffled(using: &random)))
        var grown = left
        for number in b.sorted() { grown.insert(number) }
        #expect(grown == left.union(right))
    }
}
