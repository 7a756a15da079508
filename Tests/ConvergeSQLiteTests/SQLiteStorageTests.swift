import Converge
import ConvergeSQLite
import Foundation
import Testing

@Suite("SQLite storage: bad files, read-only folders, migrations")
struct SQLiteStorageTests {
    @Test func aForeignOrGarbageFileIsRefusedNamingThePathAndLeftAlone() throws {
        let folder = temporaryFolder()
        let garbage = folder.appendingPathComponent("garbage.sqlite").path
        try Data("this is not a database, it is a shopping list\n".utf8).write(to: URL(fileURLWithPath: garbage))
        let before = try Data(contentsOf: URL(fileURLWithPath: garbage))
        #expect(throws: ConvergeError.storage("cannot open \(garbage): not a Converge store (not an SQLite database)")) {
            try SQLiteStorage(path: garbage)
        }
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
        #expect(throws: ConvergeError.storage("cannot open \(foreign): not a Converge store (another program's SQLite database)")) {
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
        #expect(throws: ConvergeError.self) { try SQLiteStorage(path: truncated).load() }

        // Overwrite a page in the middle with noise.
        var damaged = full
        for index in (full.count / 2)..<(full.count / 2 + 4_096) { damaged[index] = UInt8(truncatingIfNeeded: index &* 31) }
        let corrupt = folder.appendingPathComponent("corrupt.sqlite").path
        try damaged.write(to: URL(fileURLWithPath: corrupt))
        #expect(throws: ConvergeError.self) { try SQLiteStorage(path: corrupt).load() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: corrupt)) == damaged)
    }

    @Test func aReadOnlyFolderGivesAClearErrorAndChangesNothing() throws {
        guard getuid() != 0 else { return }  // root ignores permissions
        let folder = temporaryFolder()
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path) }
        let path = folder.appendingPathComponent("store.sqlite").path
        #expect(throws: ConvergeError.self) { try SQLiteStorage(path: path) }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aNewerSchemaIsRefused() throws {
        let path = temporaryFolder().appendingPathComponent("store.sqlite").path
        _ = try SQLiteStorage(path: path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma user_version=99'); c.commit()", path]
        try process.run()
        process.waitUntilExit()
        #expect(throws: ConvergeError.storage("cannot open \(path): written by a newer version of Converge (schema 99, this one reads up to 1)")) {
            try SQLiteStorage(path: path)
        }
    }

    @Test func theDefaultPathFollowsXDGDataHome() throws {
        let path = try SQLiteStorage.defaultPath(forName: "favourites")
        #expect(path.hasSuffix("/Converge/favourites.sqlite"))
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { #expect(path.hasPrefix(xdg)) }
        #expect(throws: ConvergeError.self) { try SQLiteStorage.defaultPath(forName: "../escape") }
    }
}
