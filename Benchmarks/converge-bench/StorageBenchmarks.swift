import CSQLite
import Converge
import ConvergeSQLite
import Foundation

/// Durable storage on SQLite: batched writes against raw SQLite, and reopening.
enum StorageBenchmarks {
    static func freshPath() -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("converge-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appendingPathComponent("store.sqlite").path
    }

    static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }

    /// The pragmas `SQLiteStorage` sets on its connection (its initialiser: a WAL journal,
    /// `synchronous=FULL`). `journal_mode` is kept in the file and checked below; the
    /// other is per connection and cannot be read back, so it is stated here.
    static let pragmas = ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL"]

    /// A digest of every entry row of the file at `path`, in key order: two files with the
    /// same rows have the same digest.
    static func entriesDigest(_ path: String) -> (rows: Int, digest: UInt64) {
        let rows = RawSQLite(path: path, readOnly: true).rows("SELECT key, siblings FROM entries ORDER BY key")
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for row in rows {
            for column in row {
                for byte in column ?? [] { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
                hash = (hash ^ 0xFF) &* 0x100_0000_01B3
            }
        }
        return (rows.count, hash)
    }

    /// sqlite.batch: 100,000 durable writes in batches of 1,000 (one transaction each)
    /// through the store, against raw SQLite writing the same rows (read back from the
    /// store's file) with the same schema, pragmas and batch size.
    static func batchedWrites() -> BenchmarkResult {
        let total = 100_000, batchSize = 1_000
        let batches = (0..<(total / batchSize)).map { b in (0..<batchSize).map { i in (key: "key-\(b * batchSize + i)", value: Value.integer(Int64(i))) } }
        var convergePath = ""
        let converge = Measure.median(setUp: { () -> ReplicatedKeyValueStore in
            if !convergePath.isEmpty { remove(convergePath) }
            convergePath = freshPath()
            return try! ReplicatedKeyValueStore(replicaID: "bench", storage: SQLiteStorage(path: convergePath), quota: .unlimited, clock: ManualClock())
        }) { store in
            for changes in batches { try! store.setValues(changes) }
        } check: { _ in
            let reopened = try! ReplicatedKeyValueStore(replicaID: "bench", storage: SQLiteStorage(path: convergePath), quota: .unlimited)
            precondition(reopened.usage.keyCount == total && reopened.value(forKey: "key-99999") == .integer(999), "the batches were not all durable")
        }

        // What the store wrote: its schema, its entry rows and its state rows.
        let source = RawSQLite(path: convergePath, readOnly: true)
        let schema = source.rows("SELECT sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL ORDER BY name")
            .map { String(decoding: $0[0]!, as: UTF8.self) }
        precondition(source.rows("PRAGMA journal_mode").first?.first??.elementsEqual("wal".utf8) == true, "the store's file is not in WAL mode")
        var siblings: [String: [UInt8]] = [:]
        for row in source.rows("SELECT key, siblings FROM entries") { siblings[String(decoding: row[0]!, as: UTF8.self)] = row[1]! }
        let stateRows = source.rows("SELECT name, value FROM state ORDER BY name").map { (name: $0[0]!, value: $0[1]!) }
        precondition(siblings.count == total && !stateRows.isEmpty && schema.count >= 2, "the store's file lacks rows")
        // The rows of each batch in the order the store writes them (keys in UTF-8 order).
        let rowBatches = batches.map { batch in
            batch.map(\.key).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { (key: Array($0.utf8), value: siblings[$0]!) }
        }
        let expected = entriesDigest(convergePath)

        var rawPath = ""
        let raw = Measure.median(setUp: { () -> RawSQLite in
            if !rawPath.isEmpty { remove(rawPath) }
            rawPath = freshPath()
            let db = RawSQLite(path: rawPath)
            for pragma in pragmas { db.execute(pragma) }
            for statement in schema { db.execute(statement) }
            return db
        }) { db in
            let insertEntry = db.prepare("INSERT OR REPLACE INTO entries (key, siblings) VALUES (?, ?)")
            let insertState = db.prepare("INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)")
            let begin = db.prepare("BEGIN IMMEDIATE"), commit = db.prepare("COMMIT")
            for rows in rowBatches {
                db.check(sqlite3_step(begin), "BEGIN"); db.check(sqlite3_reset(begin), "BEGIN")
                for row in rows { db.run(insertEntry, text: row.key, blob: row.value) }
                for row in stateRows { db.run(insertState, text: row.name, blob: row.value) }
                db.check(sqlite3_step(commit), "COMMIT"); db.check(sqlite3_reset(commit), "COMMIT")
            }
            for statement in [insertEntry, insertState, begin, commit] { sqlite3_finalize(statement) }
        } check: { _ in
            let written = entriesDigest(rawPath)
            precondition(written.rows == expected.rows && written.digest == expected.digest, "raw SQLite did not write the store's rows")
        }
        remove(convergePath)
        remove(rawPath)
        let throughput = raw.wallMilliseconds / converge.wallMilliseconds
        return BenchmarkResult(name: "sqlite.batch", figures: [
            ("writes", Double(total)), ("batch", Double(batchSize)),
            ("writes_per_s", Double(total) / converge.wallMilliseconds * 1_000), ("raw_writes_per_s", Double(total) / raw.wallMilliseconds * 1_000),
            ("wall_ms", converge.wallMilliseconds), ("raw_wall_ms", raw.wallMilliseconds),
            ("cpu_ms", converge.cpuMilliseconds), ("raw_cpu_ms", raw.cpuMilliseconds),
            ("throughput_ratio", throughput),
        ], goal: "throughput_ratio >= 0.9 (writes per second against raw SQLite's)", met: throughput >= 0.9)
    }

    /// sqlite.write: single durable writes (one transaction and one fsync each) by one store
    /// object, against the same writes alternating between two store objects on one file,
    /// where every write first catches up with the other object's previous one (issue 11:
    /// several writers on one file). Wall-clock: the disk's flush dominates.
    static func singleWrites() -> BenchmarkResult {
        let total = 400
        func run(objects: Int) -> Timing {
            var path = ""
            return Measure.median(setUp: { () -> [ReplicatedKeyValueStore] in
                if !path.isEmpty { remove(path) }
                path = freshPath()
                let storages = (0..<objects).map { _ in try! SQLiteStorage(path: path) }
                return storages.map { try! ReplicatedKeyValueStore(replicaID: "bench", storage: $0, clock: ManualClock()) }
            }) { stores in
                for index in 0..<total { try! stores[index % objects].setValue(.integer(Int64(index)), forKey: "key-\(index % 100)") }
            } check: { stores in
                let reopened = try! ReplicatedKeyValueStore(replicaID: "bench", storage: SQLiteStorage(path: path))
                precondition(reopened.replicatedState.context == VersionVector(["bench": UInt64(total)]) && reopened.values.count == 100,
                             "a write was lost or a counter issued twice")
                blackHole(stores)
            }
        }
        let single = run(objects: 1), shared = run(objects: 2)
        let ratio = shared.wallMilliseconds / single.wallMilliseconds
        return BenchmarkResult(name: "sqlite.write", figures: [
            ("writes", Double(total)),
            ("writes_per_s", Double(total) / single.wallMilliseconds * 1_000),
            ("two_objects_writes_per_s", Double(total) / shared.wallMilliseconds * 1_000),
            ("cpu_us_per_write", single.cpuMilliseconds * 1_000 / Double(total)),
            ("two_objects_cpu_us_per_write", shared.cpuMilliseconds * 1_000 / Double(total)),
            ("two_objects_time_ratio", ratio),
        ], goal: "two_objects_time_ratio <= 1.5 (catching up costs less than half a durable write)", met: ratio <= 1.5)
    }

    /// sqlite.reopen: opening a full iCloud-sized store (1,024 keys, 1 MB of values).
    static func reopen() -> BenchmarkResult {
        let path = freshPath()
        let valueBytes = Quota.iCloud.maximumTotalValueBytes / 1_024 - 8
        do {
            let store = try! ReplicatedKeyValueStore(replicaID: "bench", storage: SQLiteStorage(path: path), clock: ManualClock())
            try! store.setValues((0..<1_024).map { (key: String(format: "key-%04d", $0), value: Value.data(Data(repeating: UInt8($0 % 251), count: valueBytes))) })
        }
        let time = Measure.median(setUp: { () }) { _ in
            blackHole(try! ReplicatedKeyValueStore(replicaID: "bench", storage: SQLiteStorage(path: path)))
        } check: { _ in }
        let store = try! ReplicatedKeyValueStore(replicaID: "bench", storage: SQLiteStorage(path: path))
        precondition(store.usage.keyCount == 1_024 && store.value(forKey: "key-1023") == .data(Data(repeating: UInt8(1_023 % 251), count: valueBytes)),
                     "the reopened store lacks keys")
        remove(path)
        return BenchmarkResult(name: "sqlite.reopen", figures: [
            ("keys", 1_024), ("value_bytes", Double(valueBytes * 1_024)), ("wall_ms", time.wallMilliseconds), ("cpu_ms", time.cpuMilliseconds),
        ], goal: "wall_ms <= 50", met: time.wallMilliseconds <= 50)
    }
}
