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
    /// A.sqlite`, a write. It used to end with `A: {b, base, fresh, late2}  B: {b, base,
    /// late1, late2}` after three sync rounds.
    @Test func aStoreFileRestoredFromABackupLosesNothing() throws {
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
        #expect(try ConvergeTool.run(["--store", "A.sqlite", "write", "fresh", "written after restore"], in: folder).status == 0)
        for _ in 0..<3 { for store in ["A.sqlite", "B.sqlite"] { try sync(store, in: folder) } }
        let expected = "{\"b\":\"1\",\"base\":\"1\",\"fresh\":\"written after restore\",\"late1\":\"1\",\"late2\":\"1\"}\n"
        #expect(try read("A.sqlite", in: folder) == expected)
        #expect(try read("B.sqlite", in: folder) == expected)
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
