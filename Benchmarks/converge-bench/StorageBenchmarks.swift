import Converge
import ConvergeSQLite
import Foundation

/// Durable storage on SQLite: batched writes and reopening.
enum StorageBenchmarks {
    static func freshPath() -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("converge-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appendingPathComponent("store.sqlite").path
    }

    /// sqlite.batch: 100,000 durable writes in batches of 1,000 (one transaction each).
    static func batchedWrites() -> BenchmarkResult {
        let total = 100_000, batch = 1_000
        let batches = (0..<(total / batch)).map { b in (0..<batch).map { i in (key: "key-\(b * batch + i)", value: Value.integer(Int64(i))) } }
        var paths: [String] = []
        let time = Measure.median(setUp: { () -> ReplicatedKeyValueStore in
            let path = freshPath()
            paths.append(path)
            return try! ReplicatedKeyValueStore(replicaID: "bench", storage: SQLiteStorage(path: path), quota: .unlimited, clock: ManualClock())
        }) { store in
            for changes in batches { try! store.setValues(changes) }
        }
        let reopened = try! ReplicatedKeyValueStore(replicaID: "bench", storage: SQLiteStorage(path: paths.last!), quota: .unlimited)
        precondition(reopened.usage.keyCount == total, "the batches were not all durable")
        for path in paths { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path) }
        let perSecond = Double(total) / time * 1_000
        return BenchmarkResult(name: "sqlite.batch", figures: [
            ("writes", Double(total)), ("batch", Double(batch)), ("time_ms", time), ("writes_per_s", perSecond),
        ], goal: ">= 100,000 durable writes per second", met: perSecond >= 100_000)
    }

    /// sqlite.reopen: opening a full iCloud-sized store (1,024 keys, 1 MB of values).
    static func reopen() -> BenchmarkResult {
        let path = freshPath()
        let valueBytes = Quota.iCloud.maximumTotalValueBytes / 1_024 - 8
        do {
            let store = try! ReplicatedKeyValueStore(replicaID: "bench", storage: SQLiteStorage(path: path), clock: ManualClock())
            try! store.setValues((0..<1_024).map { (key: String(format: "key-%04d", $0), value: Value.data(Data(repeating: UInt8($0 % 251), count: valueBytes))) })
        }
        var keys = 0
        let time = Measure.median {
            let store = try! ReplicatedKeyValueStore(replicaID: "bench", storage: SQLiteStorage(path: path))
            keys = store.usage.keyCount
        }
        precondition(keys == 1_024, "the reopened store lacks keys")
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        return BenchmarkResult(name: "sqlite.reopen", figures: [("keys", 1_024), ("value_bytes", Double(valueBytes * 1_024)), ("time_ms", time)],
                               goal: "<= 50 ms", met: time <= 50)
    }
}
