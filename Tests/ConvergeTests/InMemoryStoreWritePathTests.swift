@testable import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Testing

/// A store made in memory writes without calling its storage, planning and installing
/// under one hold of its lock (see `performWrite`), and a write of one key is put in place
/// without a storage change: given the same writes, it must end where a store on a storage
/// ends, with the same verdict at every step, and that store where its storage's record
/// reopens.
@Suite("Store: an in-memory store writes as a store on a storage does")
struct InMemoryStoreWritePathTests {
    enum Step: CustomStringConvertible {
        case set(String, Value?)
        case batch([(key: String, value: Value?)])
        case remote(String, Value?)

        var description: String {
            switch self {
            case .set(let key, let value): "set \(key)=\(String(describing: value))"
            case .batch(let writes): "batch \(writes)"
            case .remote(let key, let value): "remote \(key)=\(String(describing: value))"
            }
        }
    }

    /// Every sibling (dot, timestamp, value), the context and the usage.
    static func shape(_ map: ReplicatedMap) -> String { BatchWriteTests.shape(map, timestamps: true) }

    @Test func theSameWritesLeaveTheSameState() {
        let quota = Quota(maximumKeyCount: 4, maximumTotalValueBytes: 48, maximumValueBytes: 16, maximumKeyBytes: 3)
        let keys = ["a", "b", "c", "d", "e", "abcd", "", "caf\u{E9}", "cafe\u{301}"]
        func value(_ generator: inout Xoshiro256StarStar) -> Value? {
            generator.chance(0.3) ? nil : .string(String(repeating: "v", count: generator.next(below: 20)))
        }
        expectHolds(checkProperty("anInMemoryStoreWritesAsAStoreOnAStorageDoes", cases: 300, generate: { generator -> [Step] in
            (0..<generator.next(in: 1...24)).map { _ in
                switch generator.next(below: 6) {
                case 0: .batch((0..<generator.next(in: 1...4)).map { _ in (generator.element(of: keys), value(&generator)) })
                case 1: .remote(generator.element(of: keys.filter { !$0.isEmpty }), value(&generator))
                default: .set(generator.element(of: keys), value(&generator))
                }
            }
        }, describe: { "\($0)" }) { steps in
            let clock = ManualClock()
            let inMemory = ReplicatedKeyValueStore(replicaID: "phone", quota: quota, clock: clock)
            let storage = InMemoryStorage()
            guard let onStorage = try? ReplicatedKeyValueStore(replicaID: "phone", storage: storage, quota: quota, clock: clock) else {
                return "the store on a storage could not open"
            }
            var remote = ReplicatedMap()
            for (index, step) in steps.enumerated() {
                clock.advance(byMilliseconds: 1)
                if case .remote(let key, let value) = step {
                    remote.write(value, forKey: key, replica: "tablet", timestamp: HybridTimestamp(wallMilliseconds: clock.nowMilliseconds(), logical: 0))
                }
                var verdicts: [String] = []
                for store in [inMemory, onStorage] {
                    do throws(ConvergeError) {
                        switch step {
                        case .set(let key, let value): try store.setValue(value, forKey: key)
                        case .batch(let writes): try store.setValues(writes)
                        case .remote: try store.merge(remote.asDelta)
                        }
                        verdicts.append("accepted")
                    } catch {
                        verdicts.append("refused: \(error)")
                    }
                }
                if verdicts[0] != verdicts[1] { return "step \(index) (\(step)): in memory \(verdicts[0]), on a storage \(verdicts[1])" }
                let (memoryState, storageState) = (inMemory.replicatedState, onStorage.replicatedState)
                if let violation = memoryState._invariantViolation() { return "step \(index) (\(step)): in memory, \(violation)" }
                if Self.shape(memoryState) != Self.shape(storageState) {
                    return "step \(index) (\(step)): in memory \(Self.shape(memoryState)), on a storage \(Self.shape(storageState))"
                }
                // What the storage recorded (each write's storage change) is what memory holds.
                guard let reopened = try? ReplicatedKeyValueStore(replicaID: "phone", storage: storage, quota: quota, clock: clock) else {
                    return "step \(index) (\(step)): the storage's record could not be reopened"
                }
                if Self.shape(reopened.replicatedState) != Self.shape(storageState) {
                    return "step \(index) (\(step)): reopened \(Self.shape(reopened.replicatedState)), in memory \(Self.shape(storageState))"
                }
                for key in keys where inMemory.value(forKey: key) != onStorage.value(forKey: key) {
                    return "step \(index) (\(step)): \"\(key)\" reads \(String(describing: inMemory.value(forKey: key))) in memory, \(String(describing: onStorage.value(forKey: key))) on a storage"
                }
            }
            return nil
        })
    }
}
