import Converge
import Foundation

/// The store against a plain `Dictionary`: writes, reads, and what a write costs as the
/// causal context grows.
enum StoreBenchmarks {
    static func keys(_ count: Int) -> [String] { (0..<count).map { "key-\($0)" } }
    static func values(_ count: Int) -> [Value] { (0..<count).map { Value.integer(Int64($0)) } }

    /// How many maps one sample fills, so that a sample of a small size lasts long enough to
    /// time (about 100,000 writes).
    static func copies(forKeys count: Int) -> Int { max(1, 100_000 / count) }

    static func emptyStore() -> ReplicatedKeyValueStore {
        ReplicatedKeyValueStore(replicaID: "bench", quota: .unlimited, clock: ManualClock())
    }

    /// store.set.N: `count` distinct keys written one by one into an empty in-memory store,
    /// against the same inserts into a `Dictionary<String, Value>`.
    static func set(keys count: Int, name: String) -> BenchmarkResult {
        let keys = keys(count), values = values(count), copies = copies(forKeys: count)
        let baseline = Measure.median(setUp: { Array(repeating: [String: Value](), count: copies) }) { dictionaries in
            for copy in 0..<copies {
                for index in 0..<count { dictionaries[copy][keys[index]] = values[index] }
            }
        } check: { dictionaries in
            precondition(dictionaries.allSatisfy { $0.count == count && $0[keys[count - 1]] == values[count - 1] })
        }
        let store = Measure.median(setUp: { (0..<copies).map { _ in emptyStore() } }) { stores in
            for store in stores {
                for index in 0..<count { try! store.setValue(values[index], forKey: keys[index]) }
            }
        } check: { stores in
            precondition(stores.allSatisfy { $0.usage.keyCount == count && $0.value(forKey: keys[count - 1]) == values[count - 1] })
        }
        let operations = Double(count * copies)
        return BenchmarkResult(name: name, figures: [
            ("keys", Double(count)), ("ns_per_op", store.cpuMilliseconds * 1e6 / operations),
            ("dictionary_ns_per_op", baseline.cpuMilliseconds * 1e6 / operations),
        ], ratio: store.cpuMilliseconds / baseline.cpuMilliseconds, atMost: 1.5)
    }

    /// store.get.N: reading every key of a `count`-key store, against a dictionary's lookups.
    static func get(keys count: Int, name: String) -> BenchmarkResult {
        let keys = keys(count), values = values(count), passes = copies(forKeys: count)
        var dictionary: [String: Value] = [:]
        let store = emptyStore()
        try! store.setValues(zip(keys, values).map { (key: $0, value: Optional($1)) })
        for index in 0..<count { dictionary[keys[index]] = values[index] }
        var expected: Int64 = 0
        let baseline = Measure.median {
            var sum: Int64 = 0
            for _ in 0..<passes {
                for key in keys { if case .integer(let i)? = dictionary[key] { sum &+= i } }
            }
            expected = sum
        }
        var read: Int64 = 0
        let time = Measure.median {
            var sum: Int64 = 0
            for _ in 0..<passes {
                for key in keys { if case .integer(let i)? = store.value(forKey: key) { sum &+= i } }
            }
            read = sum
        }
        precondition(read == expected && expected == Int64(passes) * Int64(count) * Int64(count - 1) / 2, "the store read different values")
        let operations = Double(count * passes)
        return BenchmarkResult(name: name, figures: [
            ("keys", Double(count)), ("ns_per_op", time.cpuMilliseconds * 1e6 / operations),
            ("dictionary_ns_per_op", baseline.cpuMilliseconds * 1e6 / operations),
        ], ratio: time.cpuMilliseconds / baseline.cpuMilliseconds, atMost: 1.5)
    }

    /// store.set.replicas: a write's cost when the store's causal context holds 1,540
    /// replicas, against 1 replica. Both stores hold the same 1,540 keys, merged from
    /// another store; only the number of replicas that wrote them differs.
    static func setWithLargeContext() -> BenchmarkResult {
        let replicas = 1_540, writes = 10_000
        let keys = (0..<writes).map { "written-\($0)" }
        func store(writtenBy writers: Int) -> ReplicatedKeyValueStore {
            var peer = ReplicatedMap()
            for index in 0..<replicas {
                peer.write(.integer(Int64(index)), forKey: "peer-\(index)", replica: ReplicaID("r\(index % writers)")!,
                           timestamp: HybridTimestamp(wallMilliseconds: 1_600_000_000_000 + UInt64(index), logical: 0))
            }
            let store = emptyStore()
            try! store.merge(peer.asDelta)
            precondition(store.replicatedState.context.count == writers && store.usage.keyCount == replicas)
            return store
        }
        func time(writers: Int) -> Double {
            Measure.median(setUp: { store(writtenBy: writers) }) { store in
                for index in 0..<writes { try! store.setValue(.integer(Int64(index)), forKey: keys[index]) }
            } check: { store in
                precondition(store.usage.keyCount == replicas + writes && store.replicatedState.context.count == writers + 1)
            }.cpuMilliseconds * 1e6 / Double(writes)
        }
        let small = time(writers: 1), large = time(writers: replicas)
        return BenchmarkResult(name: "store.set.replicas", figures: [
            ("writes", Double(writes)), ("ns_per_op_1_replica", small), ("ns_per_op_1540_replicas", large),
        ], ratio: large / small, atMost: 1.5)
    }
}
