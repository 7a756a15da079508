import Converge
import ConvergeSQLite
import ConvergeTestSupport
import Foundation
import Testing

/// Issue 11, "A store restored from a backup, copied, or recreated under the same replica
/// ID", with the `converge` tool and a shared folder, as a user would do it.
@Suite("Restored and recreated store files, end to end", .serialized)
struct RestoredStoreTests {
    func sync(_ store: String, in folder: URL) throws {
        let outcome = try ConvergeTool.run(["--store", store, "--sync-folder", "shared", "sync"], in: folder)
        #expect(outcome.status == 0, "\(outcome.errors)")
    }

    func read(_ store: String, in folder: URL) throws -> String {
        try ConvergeTool.run(["--store", store, "read"], in: folder).output
    }

    /// The reproduction: `cp A.sqlite A-backup.sqlite`, later writes, `cp A-backup.sqlite
    /// A.sqlite`, a write. With one fresh write it used to end with `A: {b, base, fresh,
    /// late2}  B: {b, base, late1, late2}` after three sync rounds.
    ///
    /// With two, the restored store writes as many new writes as the restore lost before it
    /// syncs: its counter equals what its own files in the folder hold, and only the write
    /// sessions those files name show the reuse.
    @Test(arguments: [1, 2])
    func aStoreFileRestoredFromABackupLosesNothing(freshWrites: Int) throws {
        let folder = temporaryFolder()
        #expect(try ConvergeTool.run(["--store", "A.sqlite", "--replica", "alice", "write", "base", "1"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "B.sqlite", "--replica", "bob", "write", "b", "1"], in: folder).status == 0)
        for store in ["A.sqlite", "B.sqlite", "A.sqlite"] { try sync(store, in: folder) }
        let file = folder.appendingPathComponent("A.sqlite"), backup = folder.appendingPathComponent("A-backup.sqlite")
        try FileManager.default.copyItem(at: file, to: backup)
        try ConvergeTool.run(["--store", "A.sqlite", "write", "late1", "1"], in: folder)
        try ConvergeTool.run(["--store", "A.sqlite", "write", "late2", "1"], in: folder)
        for store in ["A.sqlite", "B.sqlite"] { try sync(store, in: folder) }
        try FileManager.default.removeItem(at: file)
        try FileManager.default.copyItem(at: backup, to: file)
        for index in 1...freshWrites {
            #expect(try ConvergeTool.run(["--store", "A.sqlite", "write", "fresh\(index)", "written after restore"], in: folder).status == 0)
        }
        for _ in 0..<3 { for store in ["A.sqlite", "B.sqlite"] { try sync(store, in: folder) } }
        let fresh = (1...freshWrites).map { #""fresh\#($0)":"written after restore","# }.joined()
        let expected = #"{"b":"1","base":"1","# + fresh + #""late1":"1","late2":"1"}"# + "\n"
        #expect(try read("A.sqlite", in: folder) == expected)
        #expect(try read("B.sqlite", in: folder) == expected)
    }

    /// A store file copied to a second device, both copies writing under the same replica ID
    /// and counter, with (`withThirdDevice`) and without another device syncing beside them.
    /// The copies wrote one folder, and each skipped it as its own: alone, they never saw
    /// each other's writes (`A: {base, x1}  A2: {base, y1}` after eight rounds); with a
    /// third device relaying, they converged after four rounds. Now the copy that finds the
    /// reuse continues under a new incarnation in its own folder, and each reads the other's.
    @Test(arguments: [false, true])
    func aStoreFileCopiedToASecondDeviceLosesNothing(withThirdDevice: Bool) throws {
        let folder = temporaryFolder()
        #expect(try ConvergeTool.run(["--store", "A.sqlite", "--replica", "alice", "write", "base", "1"], in: folder).status == 0)
        var stores = ["A.sqlite", "A2.sqlite"]
        if withThirdDevice {
            #expect(try ConvergeTool.run(["--store", "B.sqlite", "--replica", "bob", "write", "b", "1"], in: folder).status == 0)
            stores.append("B.sqlite")
            try sync("B.sqlite", in: folder)
        }
        try sync("A.sqlite", in: folder)
        try FileManager.default.copyItem(at: folder.appendingPathComponent("A.sqlite"), to: folder.appendingPathComponent("A2.sqlite"))
        #expect(try ConvergeTool.run(["--store", "A.sqlite", "write", "x1", "one"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "A2.sqlite", "write", "y1", "two"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "A.sqlite", "write", "x2", "one"], in: folder).status == 0)
        for _ in 0..<2 { for store in stores { try sync(store, in: folder) } }
        let expected = (withThirdDevice ? #"{"b":"1","# : "{") + #""base":"1","x1":"one","x2":"one","y1":"two"}"# + "\n"
        for store in stores { #expect(try read(store, in: folder) == expected, "\(store)") }
    }

    /// The same one generation later: the two copies above converge (each moved to its own
    /// `alice~n`), then one of them is copied again and both copies write under that writer
    /// ID. The copy that finds the reuse moves on and removes its files from the folder it
    /// left; the other stays there, and each reads the other's folder. (A version that
    /// skipped every folder a store had written under left these two apart for good.)
    @Test func aCopyOfAStoreThatAlreadyMovedOnLosesNothing() throws {
        let folder = temporaryFolder()
        func copy(_ from: String, to: String) throws {
            try FileManager.default.copyItem(at: folder.appendingPathComponent(from), to: folder.appendingPathComponent(to))
        }
        #expect(try ConvergeTool.run(["--store", "A.sqlite", "--replica", "alice", "write", "base", "1"], in: folder).status == 0)
        try sync("A.sqlite", in: folder)
        try copy("A.sqlite", to: "A2.sqlite")
        #expect(try ConvergeTool.run(["--store", "A.sqlite", "write", "x1", "one"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "A2.sqlite", "write", "y1", "two"], in: folder).status == 0)
        for _ in 0..<2 { for store in ["A.sqlite", "A2.sqlite"] { try sync(store, in: folder) } }
        try copy("A.sqlite", to: "A3.sqlite")
        #expect(try ConvergeTool.run(["--store", "A.sqlite", "write", "p1", "one"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "A3.sqlite", "write", "q1", "two"], in: folder).status == 0)
        for _ in 0..<2 { for store in ["A.sqlite", "A3.sqlite"] { try sync(store, in: folder) } }
        try sync("A2.sqlite", in: folder)
        let expected = #"{"base":"1","p1":"one","q1":"two","x1":"one","y1":"two"}"# + "\n"
        for store in ["A.sqlite", "A2.sqlite", "A3.sqlite"] { #expect(try read(store, in: folder) == expected, "\(store)") }
    }

    /// A store deleted and recreated with the same `--replica`: its own files in the shared
    /// folder know more of its writes, so it starts a new incarnation; nothing is lost.
    @Test func aStoreDeletedAndRecreatedUnderTheSameReplicaLosesNothing() throws {
        let folder = temporaryFolder()
        try ConvergeTool.run(["--store", "a/", "--replica", "alice", "write", "one", "1"], in: folder)
        try ConvergeTool.run(["--store", "a/", "write", "two", "2"], in: folder)
        try ConvergeTool.run(["--store", "b/", "--replica", "bob", "write", "b", "1"], in: folder)
        for store in ["a/", "b/"] { try sync(store, in: folder) }
        try FileManager.default.removeItem(at: folder.appendingPathComponent("a"))
        #expect(try ConvergeTool.run(["--store", "a/", "--replica", "alice", "write", "again", "3"], in: folder).status == 0)
        for _ in 0..<3 { for store in ["a/", "b/"] { try sync(store, in: folder) } }
        let expected = "{\"again\":\"3\",\"b\":\"1\",\"one\":\"1\",\"two\":\"2\"}\n"
        #expect(try read("a/", in: folder) == expected)
        #expect(try read("b/", in: folder) == expected)
    }
}

/// A `-wal` file that does not continue its store file: an older copy put back beside it
/// (it used to undo 20 acknowledged writes silently), or another store's (`read` used to
/// print that store's data with exit 0). Both are refused at open, and the store file is
/// left as it was.
@Suite("A stale or foreign -wal beside a store")
struct JournalMismatchTests {
    /// Writes `keys` through one connection kept open (so the WAL keeps its frames), copies
    /// the live `-wal` to `copy` after the first `copyAfter` keys, and closes.
    func write(_ keys: Range<Int>, to path: String, copyingJournalTo copy: String? = nil, after copyAfter: Int = 0) throws {
        let store = try ReplicatedKeyValueStore(replicaID: "laptop", storage: SQLiteStorage(path: path))
        for index in keys {
            try store.setValue(.integer(Int64(index)), forKey: "k\(index)")
            if let copy, index == keys.lowerBound + copyAfter - 1 {
                try FileManager.default.copyItem(atPath: path + "-wal", toPath: copy)
            }
        }
    }

    func failure(opening path: String) -> StorageFailure? {
        do {
            _ = try SQLiteStorage(path: path)
            return nil
        } catch {
            if case .storage(let failure) = error { return failure }
            return nil
        }
    }

    @Test func anOlderCopyOfTheJournalIsRefusedAndUndoesNothing() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("store.sqlite").path, stale = folder.appendingPathComponent("stale-wal").path
        try write(0..<5, to: path)
        try write(5..<30, to: path, copyingJournalTo: stale, after: 5)  // the copy holds 5 of these 25 writes
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))  // closed: everything is in the main file
        try FileManager.default.copyItem(atPath: stale, toPath: path + "-wal")
        let refused = try #require(failure(opening: path))
        #expect(refused.kind == .corrupt && refused.description.contains("older copy") && refused.description.contains("would undo 20 writes"),
                "\(refused)")
        // Refused, and nothing was written into the store file: without the stale -wal, all 30 writes are there.
        try FileManager.default.removeItem(atPath: path + "-wal")
        let store = try ReplicatedKeyValueStore(replicaID: "laptop", storage: SQLiteStorage(path: path))
        #expect(store.values.count == 30 && store.replicatedState.context == VersionVector(["laptop": 30]))
    }

    @Test func anotherStoresJournalIsRefusedAndChangesNothing() throws {
        let folder = temporaryFolder()
        let mine = folder.appendingPathComponent("mine.sqlite").path, other = folder.appendingPathComponent("other.sqlite").path
        let foreign = folder.appendingPathComponent("other-wal").path
        try write(0..<3, to: mine)
        try write(100..<110, to: other, copyingJournalTo: foreign, after: 10)
        try FileManager.default.copyItem(atPath: foreign, toPath: mine + "-wal")
        let refused = try #require(failure(opening: mine))
        #expect(refused.kind == .corrupt, "\(refused)")
        try FileManager.default.removeItem(atPath: mine + "-wal")
        let store = try ReplicatedKeyValueStore(replicaID: "laptop", storage: SQLiteStorage(path: mine))
        #expect(store.values == ["k0": 0, "k1": 1, "k2": 2])
    }

    /// A `-wal` left by a crash, or written by another process right now, continues the
    /// file: it opens.
    @Test func aJournalThatContinuesTheFileOpens() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("store.sqlite").path
        try write(0..<3, to: path)
        let live = try ReplicatedKeyValueStore(replicaID: "laptop", storage: SQLiteStorage(path: path))
        try live.setValue(3, forKey: "k3")
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        let second = try ReplicatedKeyValueStore(replicaID: "laptop", storage: SQLiteStorage(path: path))
        #expect(second.values.count == 4)
    }
}
