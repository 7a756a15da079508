import Converge
import ConvergeSimulation
import Foundation

/// The benchmarks. Each builds its input untimed, times the work, and checks the result
/// (a benchmark whose output is wrong measures nothing).
enum Benchmarks {
    static let keyCount = 100_000
    static let keys = (0..<keyCount).map { "key-\($0)" }
    static let values = (0..<keyCount).map { Value.integer(Int64($0)) }

    /// store.set: 100,000 distinct keys into an in-memory store, against a plain
    /// Dictionary<String, Value> doing the same inserts.
    static func storeSet() -> BenchmarkResult {
        let baseline = Measure.median(setUp: { [String: Value]() }) { dictionary in
            for index in 0..<keyCount { dictionary[keys[index]] = values[index] }
            precondition(dictionary.count == keyCount)
        }
        let clock = ManualClock()
        let store = Measure.median(setUp: { ReplicatedKeyValueStore(replicaID: "bench", quota: .unlimited, clock: clock) }) { store in
            for index in 0..<keyCount { try! store.setValue(values[index], forKey: keys[index]) }
            precondition(store.usage.keyCount == keyCount)
        }
        return BenchmarkResult(name: "store.set", figures: [
            ("operations", Double(keyCount)), ("time_ms", store), ("ns_per_op", store * 1e6 / Double(keyCount)),
            ("baseline_ms", baseline), ("ratio", store / baseline),
        ], goal: "ratio <= 3", met: store / baseline <= 3)
    }

    /// store.get: reading 100,000 keys back, against the dictionary's lookups.
    static func storeGet() -> BenchmarkResult {
        var dictionary: [String: Value] = [:]
        let store = ReplicatedKeyValueStore(replicaID: "bench", quota: .unlimited, clock: ManualClock())
        for index in 0..<keyCount {
            dictionary[keys[index]] = values[index]
            try! store.setValue(values[index], forKey: keys[index])
        }
        var checksum: Int64 = 0
        let baseline = Measure.median {
            for key in keys { if case .integer(let i)? = dictionary[key] { checksum &+= i } }
        }
        var storeChecksum: Int64 = 0
        let time = Measure.median {
            for key in keys { if case .integer(let i)? = store.value(forKey: key) { storeChecksum &+= i } }
        }
        precondition(checksum == storeChecksum && checksum != 0, "the store read different values")
        return BenchmarkResult(name: "store.get", figures: [
            ("operations", Double(keyCount)), ("time_ms", time), ("ns_per_op", time * 1e6 / Double(keyCount)),
            ("baseline_ms", baseline), ("ratio", time / baseline),
        ], goal: "ratio <= 2", met: time / baseline <= 2)
    }

    static func state(replica: ReplicaID, keys range: Range<Int>, wall: UInt64) -> ReplicatedMap {
        var map = ReplicatedMap()
        for index in range {
            map.write(values[index], forKey: keys[index], replica: replica, timestamp: HybridTimestamp(wallMilliseconds: wall, logical: UInt32(index % 1_000)))
        }
        return map
    }

    /// merge.delta: applying a 100,000-entry delta to an empty replica, against building a
    /// dictionary of the same entries.
    static func deltaApply() -> BenchmarkResult {
        let source = state(replica: "a", keys: 0..<keyCount, wall: 1)
        let delta = source.delta(for: VersionVector())
        precondition(delta.entries.count == keyCount)
        let baseline = Measure.median(setUp: { [String: [Sibling]]() }) { dictionary in
            for (key, siblings) in delta.entries { dictionary[key] = siblings }
            precondition(dictionary.count == keyCount)
        }
        let time = Measure.median(setUp: { ReplicatedMap() }) { map in
            map.apply(delta)
            precondition(map.entries.count == keyCount)
        }
        return BenchmarkResult(name: "merge.delta", figures: [
            ("entries", Double(keyCount)), ("time_ms", time), ("entries_per_s", Double(keyCount) / time * 1_000),
            ("baseline_ms", baseline), ("ratio", time / baseline),
        ])
    }

    /// merge.join: joining two 100,000-key states of which 10% of keys were written
    /// concurrently on both.
    static func join() -> BenchmarkResult {
        // Both replicas share the left's first 90,000 writes; then each writes the other
        // 10,000 keys without seeing the other's: those keys end with two siblings.
        let concurrent = keyCount / 10
        var shared = ReplicatedMap()
        for index in concurrent..<keyCount {
            shared.write(values[index], forKey: keys[index], replica: "a", timestamp: HybridTimestamp(wallMilliseconds: 1, logical: 0))
        }
        var left = shared, right = shared
        for index in 0..<concurrent {
            left.write(values[index], forKey: keys[index], replica: "a", timestamp: HybridTimestamp(wallMilliseconds: 2, logical: 0))
            right.write(.integer(-1), forKey: keys[index], replica: "b", timestamp: HybridTimestamp(wallMilliseconds: 2, logical: 0))
        }
        let baseline = Measure.median(setUp: { [String: [Sibling]]() }) { dictionary in
            for (key, siblings) in left.entries { dictionary[key] = siblings }
            for (key, siblings) in right.entries { dictionary[key, default: []] += siblings }
            precondition(dictionary.count == keyCount)
        }
        let time = Measure.median(setUp: { left }) { map in
            map.join(right)
            precondition(map.entries.count == keyCount)
        }
        var check = left
        check.join(right)
        precondition(check.siblings(forKey: keys[0]).count == 2 && check.siblings(forKey: keys[keyCount - 1]).count == 1)
        return BenchmarkResult(name: "merge.join", figures: [
            ("keys", Double(keyCount)), ("concurrent_keys", Double(keyCount / 10)), ("time_ms", time),
            ("entries_per_s", Double(keyCount) / time * 1_000), ("baseline_ms", baseline), ("ratio", time / baseline),
        ])
    }

    /// b3.1 (crdt-benchmarks): 1,540 replicas each set the same key to a number
    /// concurrently; every replica's update is encoded and applied to one replica.
    static func b31() -> BenchmarkResult {
        let replicas = 1_540
        var updateBytes = 0
        var stateBytes = 0
        let time = Measure.median(setUp: { () }) { _ in
            var target = ReplicatedMap()
            var total = 0
            for index in 0..<replicas {
                var replica = ReplicatedMap()
                let id = ReplicaID("r\(index)")!
                replica.write(.integer(Int64(index)), forKey: "v", replica: id,
                              timestamp: HybridTimestamp(wallMilliseconds: 1_700_000_000_000 + UInt64(index), logical: 0))
                let update = replica.delta(for: VersionVector()).encoded()
                total += update.count
                target.apply(try! ReplicatedMap.Delta(encoded: update))
            }
            precondition(target.siblings(forKey: "v").count == replicas)
            updateBytes = total
            stateBytes = target.encoded().count
        }
        let met = time < 75 && updateBytes < 49_169 && stateBytes < 32_225
        return BenchmarkResult(name: "b3.1", figures: [
            ("replicas", Double(replicas)), ("time_ms", time), ("update_bytes", Double(updateBytes)), ("state_bytes", Double(stateBytes)),
            ("yjs_time_ms", 75), ("yjs_update_bytes", 49_169), ("yjs_state_bytes", 32_225),
        ], goal: "below Yjs on all three", met: met)
    }
}

