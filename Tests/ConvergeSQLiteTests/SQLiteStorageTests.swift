import CSQLite
import Converge
@testable import ConvergeSQLite
import ConvergeTestSupport
@testable import ConvergeSimulation
import Foundation
import Testing

@Suite("SQLite storage: bad files, read-only folders, migrations")
struct SQLiteStorageTests {
    @Test func aForeignOrGarbageFileIsRefusedNamingThePathAndLeftAlone() throws {
        let folder = temporaryFolder()
        let garbage = folder.appendingPathComponent("garbage.sqlite").path
        try Data("this is not a database, it is a shopping list\n".utf8).write(to: URL(fileURLWithPath: garbage))
        let before = try Data(contentsOf: URL(fileURLWithPath: garbage))
        #expect(throws: ConvergeError.storage(StorageFailure(kind: .notADatabase, path: garbage, operation: .open))) {
            try SQLiteStorage(path: garbage)
        }
        #expect(storageFailure { try SQLiteStorage(path: garbage) }?.description == "cannot open \(garbage): not a Converge store (not a database file)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: garbage)) == before)

        // Another program's SQLite database.
        let foreign = folder.appendingPathComponent("foreign.sqlite").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table notes(t)'); c.commit()", foreign]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        let foreignBytes = try Data(contentsOf: URL(fileURLWithPath: foreign))
        #expect(throws: ConvergeError.storage(StorageFailure(kind: .foreignStore, path: foreign, operation: .open))) {
            try SQLiteStorage(path: foreign)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: foreign)) == foreignBytes)
    }

    @Test func aTruncatedOrCorruptStoreIsRefused() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("store.sqlite").path
        do {
            let store = try ReplicatedKeyValueStore(replicaID: "phone", storage: try SQLiteStorage(path: path), quota: .unlimited, clock: ManualClock())
            try store.setValues((0..<2_000).map { (key: "key-\($0)", value: Value.string(String(repeating: "v", count: 100))) })
        }
        // Fold the WAL into the main file so truncating it loses pages.
        _ = try SQLiteStorage(path: path)
        try? FileManager.default.removeItem(atPath: path + "-wal")
        try? FileManager.default.removeItem(atPath: path + "-shm")
        let full = try Data(contentsOf: URL(fileURLWithPath: path))
        let truncated = folder.appendingPathComponent("truncated.sqlite").path
        try full.prefix(full.count / 2).write(to: URL(fileURLWithPath: truncated))
        let failure = storageFailure { try SQLiteStorage(path: truncated).load() }
        #expect(failure?.kind == .corrupt && failure?.path == truncated, "\(String(describing: failure))")

        // Overwrite a page in the middle with noise.
        var damaged = full
        for index in (full.count / 2)..<(full.count / 2 + 4_096) { damaged[index] = UInt8(truncatingIfNeeded: index &* 31) }
        let corrupt = folder.appendingPathComponent("corrupt.sqlite").path
        try damaged.write(to: URL(fileURLWithPath: corrupt))
        #expect(storageFailure { try SQLiteStorage(path: corrupt).load() }?.kind == .corrupt)
        #expect(try Data(contentsOf: URL(fileURLWithPath: corrupt)) == damaged)
    }

    /// The trial: random bytes written into pages of a store file. Each damaged
    /// copy is refused, or opens with exactly the values written: never with an altered one.
    @Test func randomBytesInPagesAreRefusedOrHarmlessNeverAnAlteredValue() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("store.sqlite").path
        let written = (0..<40).map { (key: "key-\($0)", value: Value.string("value number \($0) " + String(repeating: "x", count: $0))) }
        do {
            let store = try ReplicatedKeyValueStore(replicaID: "phone", storage: try SQLiteStorage(path: path), quota: .unlimited, clock: ManualClock())
            try store.setValues(written)
        }
        _ = try SQLiteStorage(path: path)
        try? FileManager.default.removeItem(atPath: path + "-wal")
        try? FileManager.default.removeItem(atPath: path + "-shm")
        let full = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var generator = Xoshiro256StarStar(seed: 12)
        var outcomes = (refused: 0, intact: 0, altered: [String]())
        for trial in 0..<200 {
            var damaged = full
            let start = generator.next(below: full.count - 16)
            for index in start..<(start + 1 + generator.next(below: 16)) { damaged[index] = UInt8(truncatingIfNeeded: generator.next()) }
            let copy = folder.appendingPathComponent("trial-\(trial).sqlite").path
            try Data(damaged).write(to: URL(fileURLWithPath: copy))
            guard let store = try? ReplicatedKeyValueStore(replicaID: "phone", storage: SQLiteStorage(path: copy), quota: .unlimited, clock: ManualClock()) else {
                outcomes.refused += 1
                continue
            }
            let read = store.replicatedState.liveKeys.map { (key: $0, value: store.value(forKey: $0)) }
            if read.map(\.key) == written.map(\.key).sortedByUTF8() && read.allSatisfy({ entry in written.first { $0.key == entry.key }?.value == entry.value }) {
                outcomes.intact += 1
            } else {
                outcomes.altered.append("trial \(trial): bytes at \(start) changed what the store reads")
            }
        }
        #expect(outcomes.altered.isEmpty, "\(outcomes.altered)")
        // Not vacuous: damage that lands in the records is refused (much of a small file is
        // free space, where damage is harmless).
        #expect(outcomes.refused >= 20, "refused \(outcomes.refused), intact \(outcomes.intact)")
    }

    /// "é" composed and decomposed are one key, in memory and on disk: the second write
    /// replaces the first, also after a reopen (SQLite compares the bytes, which differ).
    @Test func oneKeyInTwoUnicodeSpellingsIsOneRowAndTheLaterWriteWins() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("store.sqlite").path
        do {
            let store = try ReplicatedKeyValueStore(replicaID: "phone", storage: try SQLiteStorage(path: path), clock: ManualClock())
            try store.setValue(.string("first"), forKey: "caf\u{E9}")
            try store.setValue(.string("second"), forKey: "cafe\u{301}")
            #expect(store.value(forKey: "caf\u{E9}") == .string("second"))
        }
        let reopened = try ReplicatedKeyValueStore(replicaID: "phone", storage: try SQLiteStorage(path: path), clock: ManualClock())
        #expect(reopened.value(forKey: "caf\u{E9}") == .string("second"))
        #expect(reopened.replicatedState.entries.count == 1)
        let db = try SQLiteConnection(path: path)
        #expect(try db.execute("SELECT count(*) FROM entries", doing: .read).first?.first?.integer == 1)
    }

    /// One damaged record names itself.
    @Test func aDamagedRecordIsRefusedNamingIt() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("store.sqlite").path
        do {
            let store = try ReplicatedKeyValueStore(replicaID: "phone", storage: try SQLiteStorage(path: path), clock: ManualClock())
            try store.setValue(.string("original"), forKey: "k")
        }
        let db = try SQLiteConnection(path: path)
        let stored = try #require(try db.execute("SELECT siblings FROM entries WHERE key = 'k'", doing: .read).first?.first?.blob)
        var flipped = stored
        flipped[flipped.count - 6] ^= 0x01
        try db.execute("UPDATE entries SET siblings = ? WHERE key = 'k'", [.blob(flipped)])
        let failure = storageFailure { try SQLiteStorage(path: path).load() }
        #expect(failure?.kind == .corrupt)
        #expect(failure?.description.contains("the entries row \"k\" is damaged") == true, "\(String(describing: failure))")
    }

    @Test func aReadOnlyFolderGivesAClearErrorAndChangesNothing() throws {
        guard getuid() != 0 else { return }  // root ignores permissions
        let folder = temporaryFolder()
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path) }
        let path = folder.appendingPathComponent("store.sqlite").path
        let failure = storageFailure { try SQLiteStorage(path: path) }
        #expect(failure?.kind == .cannotOpen && failure?.path == path && failure?.operation == .open, "\(String(describing: failure))")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aStoreOpenedReadOnlyReadsAndRefusesEverySaveAndCreatesNothing() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("store.sqlite").path
        // Nothing there: a read-only open creates nothing.
        #expect(storageFailure { try SQLiteStorage(path: path, readOnly: true) }?.kind == .cannotOpen)
        #expect(!FileManager.default.fileExists(atPath: path))
        do {
            let writer = try ReplicatedKeyValueStore(replicaID: "laptop", storage: try SQLiteStorage(path: path))
            try writer.setValue(.string("v"), forKey: "k")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let storage = try SQLiteStorage(path: path, readOnly: true)
        #expect(storage.isReadOnly)
        let reader = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storage)
        #expect(reader.string(forKey: "k") == "v")
        let refused = #expect(throws: ConvergeError.self) { try reader.setValue(.string("w"), forKey: "k") }
        if case .storage(let failure)? = refused { #expect(failure.kind == .readOnly && failure.path == path) }
        #expect(reader.string(forKey: "k") == "v")
        #expect(storageFailure { try storage.replaceAll(with: StoredState()) }?.kind == .readOnly)
        // A write that changes nothing needs no write access.
        #expect(try storage.write(since: nil) { _ in nil } > 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func aReadOnlyOpenOfAnotherDatabaseChangesNothing() throws {
        let path = temporaryFolder().appendingPathComponent("other.sqlite").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table t (x)'); c.commit()", path]
        try process.run()
        process.waitUntilExit()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(storageFailure { try SQLiteStorage(path: path, readOnly: true) }?.kind == .foreignStore)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func aNewerSchemaIsRefused() throws {
        let path = temporaryFolder().appendingPathComponent("store.sqlite").path
        _ = try SQLiteStorage(path: path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma user_version=99'); c.commit()", path]
        try process.run()
        process.waitUntilExit()
        let failure = storageFailure { try SQLiteStorage(path: path) }
        #expect(failure?.kind == .newerSchema && failure?.path == path)
        #expect(failure?.description == "cannot open \(path): written by a newer version of Converge (schema 99, this one reads up to \(SQLiteStorage.schemaVersion))")
    }

    @Test func sqliteResultCodesBecomeKindsYouCanMatch() {
        let expected: [(Int32, StorageFailure.Kind)] = [
            (SQLITE_FULL, .diskFull), (SQLITE_READONLY, .readOnly), (SQLITE_READONLY | (1 << 8), .readOnly),
            (SQLITE_CANTOPEN, .cannotOpen), (SQLITE_PERM, .permissionDenied), (SQLITE_AUTH, .permissionDenied),
            (SQLITE_NOTADB, .notADatabase), (SQLITE_CORRUPT, .corrupt), (SQLITE_IOERR, .ioError),
            (SQLITE_IOERR | (3 << 8), .ioError), (SQLITE_BUSY, .locked), (SQLITE_LOCKED, .locked),
            (SQLITE_MISUSE, .other),
        ]
        for (code, kind) in expected {
            #expect(SQLiteConnection.kind(ofResultCode: code) == kind, "SQLite code \(code)")
        }
        let error = SQLiteConnection.error(code: SQLITE_IOERR | (3 << 8), message: "disk I/O error", path: "/s.sqlite", doing: .write)
        #expect(error == .storage(StorageFailure(kind: .ioError, path: "/s.sqlite", operation: .write, detail: "disk I/O error")))
        #expect("\(error)" == "storage error: cannot write /s.sqlite: I/O error (disk I/O error)")
    }

    @Test func theDefaultPathFollowsXDGDataHome() throws {
        let path = try SQLiteStorage.defaultPath(forName: "favourites")
        #expect(path.hasSuffix("/Converge/favourites.sqlite"))
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { #expect(path.hasPrefix(xdg)) }
        #expect(storageFailure { try SQLiteStorage.defaultPath(forName: "../escape") }?.kind == .invalidName)
    }

    @Test func aLargeArrayIsStoredAndLoadedInItsEncodingAndReadsBackEqual() throws {
        let path = temporaryFolder().appendingPathComponent("store.sqlite").path
        let quota = Quota(maximumKeyCount: 10, maximumTotalValueBytes: 1_000_000, maximumValueBytes: 1_000_000, maximumKeyBytes: 64)
        let bools = Value.array((0..<100_000).map { .bool($0.isMultiple(of: 2)) })
        do {
            let store = try ReplicatedKeyValueStore(replicaID: "peer", storage: SQLiteStorage(path: path), quota: quota)
            try store.setValue(bools, forKey: "big")
            try store.setValue("x", forKey: "mine")
        }
        // Reopened, the array is loaded as bytes (memory follows its encoding, not its
        // 100,000 elements), reads back equal, and counts its encoded size.
        let store = try ReplicatedKeyValueStore(replicaID: "peer", storage: SQLiteStorage(path: path), quota: quota)
        #expect(store.siblings(forKey: "big").map(\.keepsValueEncoded) == [true])
        #expect(store.siblings(forKey: "mine").map(\.keepsValueEncoded) == [false])
        #expect(store.value(forKey: "big") == bools)
        #expect(store.siblings(forKey: "big")[0].valueSizeBytes == bools.encodedSize)
        try store.setValue(.array([.bool(true)]), forKey: "big")
        #expect(store.value(forKey: "big") == .array([.bool(true)]))
    }
}
