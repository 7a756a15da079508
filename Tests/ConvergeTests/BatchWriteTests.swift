@testable import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Testing

/// `setValues` plans a batch on its own writes and usage instead of on a copy of the map;
/// it must do what writing the batch key by key on a copy did: the same quota verdict at
/// the same write, the same no-op removals, the same dots and values.
@Suite("Store: a batch planned without a copy of the map")
struct BatchWriteTests {
    /// The state a batch must leave, by the definition: each write checked against the
    /// quota on the map the batch has made so far, then written; `nil` if one is refused.
    static func expected(_ batch: [(key: String, value: Value?)], on before: ReplicatedMap, writer: ReplicaID, quota: Quota) -> ReplicatedMap? {
        var map = before
        for (key, value) in batch {
            guard (try? quota.check(writing: value, forKey: key, in: map)) != nil else { return nil }
            if let sibling = map.plannedWrite(value, forKey: key, replica: writer, timestamp: .zero) { map.commitWrite(sibling, forKey: key) }
        }
        return map
    }

    /// Every sibling's dot and value (and timestamp, if asked), and the context and usage:
    /// what a batch decides. A batch's timestamps come from the store's clock, so this
    /// suite leaves them out; ``InMemoryStoreWritePathTests`` compares them too.
    static func shape(_ map: ReplicatedMap, timestamps: Bool = false) -> String {
        map.entries.keys.sortedByUTF8().map { key in
            "\(key)=" + map.entries[key]!.map { sibling in
                "\(sibling.dot)" + (timestamps ? "@\(sibling.timestamp)" : "") + "/\(String(describing: sibling.value))"
            }.joined(separator: ",")
        }.joined(separator: " ") + " | \(map.context) | \(map.usage)"
    }

    @Test func aBatchDoesWhatWritingItKeyByKeyDoes() {
        let quota = Quota(maximumKeyCount: 4, maximumTotalValueBytes: 40, maximumValueBytes: 16, maximumKeyBytes: 3)
        typealias Step = (batch: [(key: String, value: Value?)], remote: Bool)
        expectHolds(checkProperty("aBatchDoesWhatWritingItKeyByKeyDoes", cases: 500, generate: { generator -> [Step] in
            (0..<generator.next(in: 1...12)).map { _ in
                let batch = (0..<generator.next(in: 1...6)).map { _ -> (key: String, value: Value?) in
                    let key = generator.element(of: ["a", "b", "c", "d", "e", "ab", "abcd"])
                    let value: Value? = generator.chance(0.3) ? nil : .string(String(repeating: "v", count: generator.next(below: 18)))
                    return (key, value)
                }
                return (batch, generator.chance(0.2))
            }
        }, describe: { "\($0.map { "\($0.remote ? "remote " : "")\($0.batch)" })" }) { steps in
            let store = ReplicatedKeyValueStore(replicaID: "local", quota: quota, clock: ManualClock())
            var remote = ReplicatedMap()
            for (index, step) in steps.enumerated() {
                if step.remote {
                    for (key, value) in step.batch {
                        remote.write(value, forKey: key, replica: "remote", timestamp: HybridTimestamp(wallMilliseconds: UInt64(index), logical: 0))
                    }
                    _ = try? store.merge(remote.asDelta)
                    continue
                }
                let before = store.replicatedState
                let expected = Self.expected(step.batch, on: before, writer: store.writerID, quota: quota)
                let accepted = (try? store.setValues(step.batch)) != nil
                let after = store.replicatedState
                if let invariant = after._invariantViolation() { return "step \(index): \(invariant)" }
                switch (expected, accepted) {
                case (nil, true): return "step \(index): accepted a batch a write of which breaks the quota"
                case (.some, false): return "step \(index): refused a batch the quota admits"
                case (nil, false): if after != before { return "step \(index): a refused batch changed the state" }
                case (.some(let expected), true):
                    if Self.shape(after) != Self.shape(expected) {
                        return "step \(index): left \(Self.shape(after)), writing key by key leaves \(Self.shape(expected))"
                    }
                }
            }
            return nil
        })
    }
}
