import Converge
@testable import ConvergeSimulation
import Testing

/// The reference model's write sets, and what the model reads off them, against plain sets
/// and a reading of every write: the compact form (a complete prefix counted, not stored)
/// and the model's shortcuts over it must answer exactly as the whole sets did.
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

    /// A model fed random writes and messages among a hub and three devices (with crashes
    /// that lose unflushed writes): its counters and its current writes, read the short way,
    /// are those read off every write.
    @Test("the model's readings agree with reading every write", arguments: 0..<40)
    func modelReadingsAgreeWithReadingEveryWrite(seed: UInt64) {
        var random = Xoshiro256StarStar(seed: seed)
        var model = ReferenceModel()
        let nodes: [SimulatedNetwork.Node] = [.hub, .device(0), .device(1), .device(2)]
        var unflushed: [Int: [Int]] = [:]
        var ledger = 0, message = 0
        func highest(_ replica: String, in known: WriteSet) -> UInt64 {
            known.members.filter { model.writes[$0].id.replica == replica }.map { model.writes[$0].id.counter }.max() ?? 0
        }
        for _ in 0..<Int.random(in: 50...400, using: &random) {
            let d = Int.random(in: 0..<3, using: &random)
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                let known = model.knowledge(of: .device(d), in: .default)
                let counter = highest("d\(d)", in: known) + 1
                let key = "k\(Int.random(in: 0..<6, using: &random))"
                let value: Value? = Bool.random(using: &random) ? .integer(Int64(ledger)) : nil
                let problem = model.recordWrite(by: .device(d), account: .default, key: key,
                                                id: ReferenceModel.WriteID(replica: "d\(d)", counter: counter),
                                                stamp: ReferenceModel.Stamp(wall: UInt64(ledger), logical: 0), value: value, ledgerIndex: ledger)
                #expect(problem == nil, "seed \(seed)")
                unflushed[d, default: []].append(ledger)
                ledger += 1
            case 5..<8:
                let from = nodes.randomElement(using: &random)!, to = nodes.randomElement(using: &random)!
                model.sent(message: message, from: from, account: .default)
                model.delivered(message: message, to: to, currentAccount: .default, lastCopy: true)
                message += 1
            case 8:
                model.flushed(device: d)
                unflushed[d] = []
            default:
                model.crashed(device: d)
                for index in unflushed[d] ?? [] { model.forget(ledgerIndex: index) }
                unflushed[d] = []
            }
        }
        for node in nodes {
            let known = model.knowledge(of: node, in: .default)
            let counters = model.counters(of: known)
            for replica in ["d0", "d1", "d2"] { #expect(counters[replica, default: 0] == highest(replica, in: known), "seed \(seed)") }
            // Every known write that counts, by key; current if no other of its key saw it.
            var byKey: [String: [Int]] = [:]
            for index in known.members where !model.writes[index].forgotten { byKey[model.writes[index].key, default: []].append(index) }
            let expected = model.expected(in: .default, knowing: known)
            #expect(Set(expected.keys) == Set(byKey.keys), "seed \(seed)")
            for (key, indices) in byKey {
                let current = indices.filter { index in !indices.contains { model.writes[$0].past.contains(index) } }
                    .map { model.writes[$0].id }.sorted()
                #expect(expected[key]?.map(\.id) == current, "seed \(seed) \(node) \(key)")
            }
        }
    }
}
