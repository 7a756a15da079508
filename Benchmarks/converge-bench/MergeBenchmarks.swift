import Converge
import Foundation

/// Applying a large delta and joining two large states, against building a dictionary of
/// the same entries.
enum MergeBenchmarks {
    static let keyCount = 100_000
    static let keys = StoreBenchmarks.keys(keyCount)
    static let values = StoreBenchmarks.values(keyCount)

    /// A map of `keys` written by `replica`, with distinct timestamps.
    static func state(replica: ReplicaID, keys range: Range<Int>, wall: UInt64) -> ReplicatedMap {
        var map = ReplicatedMap()
        for index in range {
            map.write(values[index], forKey: keys[index], replica: replica,
                      timestamp: HybridTimestamp(wallMilliseconds: wall, logical: UInt32(index % 1_000)))
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
        } check: { precondition($0.count == keyCount) }
        let time = Measure.median(setUp: { ReplicatedMap() }) { map in
            map.apply(delta)
        } check: { precondition($0 == source) }
        return BenchmarkResult(name: "merge.delta", figures: [
            ("entries", Double(keyCount)), ("time_ms", time.cpuMilliseconds),
            ("entries_per_s", Double(keyCount) / time.cpuMilliseconds * 1_000), ("dictionary_ms", baseline.cpuMilliseconds),
            ("ratio", time.cpuMilliseconds / baseline.cpuMilliseconds),
        ])
    }

    /// merge.join: joining two 100,000-key states of which 10% of keys were written
    /// concurrently on both.
    static func join() -> BenchmarkResult {
        // Both replicas share the left's last 90,000 writes; then each writes the other
        // 10,000 keys without seeing the other's: those keys end with two siblings.
        let concurrent = keyCount / 10
        let shared = state(replica: "a", keys: concurrent..<keyCount, wall: 1)
        var left = shared, right = shared
        for index in 0..<concurrent {
            left.write(values[index], forKey: keys[index], replica: "a", timestamp: HybridTimestamp(wallMilliseconds: 2, logical: 0))
            right.write(.integer(-1), forKey: keys[index], replica: "b", timestamp: HybridTimestamp(wallMilliseconds: 2, logical: 0))
        }
        let baseline = Measure.median(setUp: { [String: [Sibling]]() }) { dictionary in
            for (key, siblings) in left.entries { dictionary[key] = siblings }
            for (key, siblings) in right.entries { dictionary[key, default: []] += siblings }
        } check: { precondition($0.count == keyCount) }
        let time = Measure.median(setUp: { left }) { map in
            map.join(right)
        } check: { map in
            precondition(map.entries.count == keyCount && map.siblings(forKey: keys[0]).count == 2
                         && map.siblings(forKey: keys[keyCount - 1]).count == 1)
        }
        return BenchmarkResult(name: "merge.join", figures: [
            ("keys", Double(keyCount)), ("concurrent_keys", Double(concurrent)), ("time_ms", time.cpuMilliseconds),
            ("entries_per_s", Double(keyCount) / time.cpuMilliseconds * 1_000), ("dictionary_ms", baseline.cpuMilliseconds),
            ("ratio", time.cpuMilliseconds / baseline.cpuMilliseconds),
        ])
    }
}
