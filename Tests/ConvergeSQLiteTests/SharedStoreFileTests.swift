import Converge
import ConvergeSQLite
import ConvergeSharedFolder
import ConvergeTestSupport
import Foundation
import Synchronization
import Testing

/// Every dot of a store file, and whether any two writes share one.
private func dots(ofStoreAt path: String) throws -> (all: [Dot], context: VersionVector, keys: Set<String>) {
    let stored = try #require(try SQLiteStorage(path: path).load())
    let all = stored.map.entries.values.flatMap { $0.map(\.dot) }
    return (all, stored.map.context, Set(stored.map.entries.keys))
}

/// Starts the built `converge` tool without waiting for it.
private func startTool(_ arguments: [String], in folder: URL, output: FileHandle? = nil) throws -> Process {
    let process = Process()
    process.executableURL = ConvergeTool.binary
    process.arguments = arguments
    process.currentDirectoryURL = folder
    process.standardOutput = output ?? FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
}

/// Issue 11, "Several processes or store objects on one store file": any number of
/// processes and store objects may write one file at once; every write that returns is
/// durable, has a dot of its own and is never rolled back; each writer sees the others'.
@Suite("Several processes and store objects on one store file", .serialized)
struct SharedStoreFileTests {
    /// The reproduction: a `watch` runs beside a `write` on the same store. The `watch`
    /// used to save its stale context over the write's, leaving `k2`'s dot outside the
    /// context and the store unreadable ("the store is corrupt") for every later command.
    @Test func aWriteBesideAWatchIsKeptAndTheStoreStaysReadable() throws {
        let folder = temporaryFolder()
        #expect(try ConvergeTool.run(["--store", "b/", "--replica", "bob", "write", "k", "v"], in: folder).status == 0)
        let outputFile = folder.appendingPathComponent("watch.out")
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        let watch = try startTool(["--store", "b/", "--sync-folder", "shared", "watch", "--interval", "200"], in: folder,
                                  output: try FileHandle(forWritingTo: outputFile))
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) } }
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try ConvergeTool.run(["--store", "b/", "write", "k2", "v2"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "a/", "--replica", "alice", "write", "n", "1"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "a/", "--sync-folder", "shared", "sync"], in: folder).status == 0)
        // Let the watch take alice's file (it writes to the store) and publish k2.
        Thread.sleep(forTimeInterval: 1.2)
        kill(watch.processIdentifier, SIGKILL)
        watch.waitUntilExit()
        let printed = try String(contentsOf: outputFile, encoding: .utf8)
        #expect(printed.contains("{\"key\":\"k2\",\"value\":\"v2\"}"), "the watch did not see the other process's write: \(printed)")
        #expect(printed.contains("{\"key\":\"n\",\"value\":\"1\"}"), "\(printed)")
        let read = try ConvergeTool.run(["--store", "b/", "read"], in: folder)
        #expect(read.status == 0, "\(read.errors)")
        #expect(read.output == "{\"k\":\"v\",\"k2\":\"v2\",\"n\":\"1\"}\n")
        // The watch published k2 too: alice gets every write of bob's.
        #expect(try ConvergeTool.run(["--store", "a/", "--sync-folder", "shared", "sync"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "a/", "read"], in: folder).output == "{\"k\":\"v\",\"k2\":\"v2\",\"n\":\"1\"}\n")
        let store = try dots(ofStoreAt: folder.appendingPathComponent("b/converge.sqlite").path)
        #expect(Set(store.all).count == store.all.count)
    }

    /// `seq 1 20 | xargs -P 8 -I{} converge --store p/ write key{} v{}`: used to fail three
    /// writes and give three keys one dot. Every process must succeed, with a dot of its own.
    @Test func twentyWritesFromEightProcessesAtOnceAllLandWithDistinctDots() throws {
        let folder = temporaryFolder()
        #expect(try ConvergeTool.run(["--store", "p/", "--replica", "laptop", "write", "key0", "v0"], in: folder).status == 0)
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "seq 1 20 | xargs -P 8 -I{} '\(ConvergeTool.binary.path)' --store p/ write key{} v{}"]
        shell.currentDirectoryURL = folder
        try shell.run()
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0, "some write failed")
        let store = try dots(ofStoreAt: folder.appendingPathComponent("p/converge.sqlite").path)
        #expect(store.keys == Set((0...20).map { "key\($0)" }))
        #expect(Set(store.all).count == 21, "\(store.all.sorted())")
        #expect(store.context == VersionVector(["laptop": 21]))
    }

    /// Four writer processes (the test-only stress writer) write 60 keys each into one file
    /// at once: 240 distinct dots, none lost, the context exactly 240.
    @Test func fourStressWritersOnOneFileLoseNothing() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("store.sqlite").path
        let writers = try (0..<4).map { index in
            try ChildProcessHandle.start(ChildProcess.executable("converge-stress-writer"), [path, "shared", "60", "w\(index)-"], in: folder)
        }
        for writer in writers { #expect(writer.wait() == 0) }
        let store = try dots(ofStoreAt: path)
        #expect(store.keys.count == 240)
        #expect(Set(store.all).count == 240)
        #expect(store.context == VersionVector(["shared": 240]))
    }

    /// Two processes creating a new store at once used to flip its recorded replica and
    /// fail with `table entries already exists`. Now the file is created once: every
    /// process succeeds, and they all write as one replica.
    @Test(arguments: [true, false])
    func processesCreatingOneStoreAtOnceAllSucceedAsOneReplica(namingTheReplica: Bool) throws {
        let folder = temporaryFolder()
        let processes = try (0..<6).map { index in
            try startTool(["--store", "new/"] + (namingTheReplica ? ["--replica", "same"] : []) + ["write", "k\(index)", "v\(index)"], in: folder)
        }
        for process in processes {
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        let store = try dots(ofStoreAt: folder.appendingPathComponent("new/converge.sqlite").path)
        #expect(store.keys == Set((0..<6).map { "k\($0)" }))
        #expect(store.context.count == 1, "more than one replica wrote: \(store.context)")
        #expect(Set(store.all).count == 6)
        if namingTheReplica { #expect(store.context == VersionVector(["same": 6])) }
    }

    /// Two `SQLiteStorage` objects on one file in one process used to stamp two keys
    /// `laptop:1`, and a third device only ever saw one of them.
    @Test func twoStorageObjectsInOneProcessShareCountersAndSeeEachOther() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("store.sqlite").path
        let clock = ManualClock()
        let first = try ReplicatedKeyValueStore(replicaID: "laptop", storage: SQLiteStorage(path: path), clock: clock)
        let second = try ReplicatedKeyValueStore(replicaID: "laptop", storage: SQLiteStorage(path: path), clock: clock)
        let events = Mutex<[StoreEvent]>([])
        let token = first.observe { event in events.withLock { $0.append(event) } }
        try first.setValue("one", forKey: "k1")
        try second.setValue("two", forKey: "k2")
        #expect(first.siblings(forKey: "k1").map(\.dot) == [Dot(replica: "laptop", counter: 1)])
        #expect(second.siblings(forKey: "k2").map(\.dot) == [Dot(replica: "laptop", counter: 2)])
        // The second object saw the first's write when it wrote; the first sees the second's
        // when it looks, with an external-change notification.
        #expect(second.value(forKey: "k1") == "one")
        #expect(try first.refresh() == ["k2"])
        #expect(events.withLock { $0 } == [.externalChange(ExternalChange(reason: .serverChange, keys: ["k2"]))])
        token.cancel()
        // Writes from both objects on many threads at once: each has a dot of its own.
        DispatchQueue.concurrentPerform(iterations: 40) { index in
            try! (index.isMultiple(of: 2) ? first : second).setValue(.integer(Int64(index)), forKey: "t\(index)")
        }
        let all = try dots(ofStoreAt: path)
        #expect(all.keys.count == 42 && Set(all.all).count == 42 && all.context == VersionVector(["laptop": 42]))
        // A third device sees every write, whichever object published it.
        let shared = InMemoryFolder()
        try SharedFolderSync(files: shared).synchronize(first)
        let third = ReplicatedKeyValueStore(replicaID: "desktop", clock: clock)
        try SharedFolderSync(files: shared).synchronize(third)
        #expect(third.value(forKey: "k1") == "one" && third.value(forKey: "k2") == "two")
        #expect(third.values.count == 42)
    }

    /// A file written by an older version (schema 1) opens, and its writers coordinate from
    /// then on.
    @Test func aStoreOfSchemaOneIsMigrated() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("old.sqlite").path
        // A version-1 file: made by the current version, then taken back to version 1's
        // tables and rows.
        _ = try ReplicatedKeyValueStore(replicaID: "old", storage: SQLiteStorage(path: path)).setValue("kept", forKey: "k")
        try SQLiteTestFile.downgradeToSchemaOne(path)
        let reopened = try ReplicatedKeyValueStore(replicaID: "old", storage: SQLiteStorage(path: path))
        #expect(reopened.value(forKey: "k") == "kept")
        try reopened.setValue("new", forKey: "k2")
        let other = try ReplicatedKeyValueStore(replicaID: "old", storage: SQLiteStorage(path: path))
        try other.setValue("third", forKey: "k3")
        #expect(try reopened.refresh() == ["k3"])
        #expect(reopened.replicatedState.context == VersionVector(["old": 3]))
    }
}

/// A child process started without waiting, whose exit status can be awaited.
struct ChildProcessHandle {
    let process: Process

    static func start(_ executable: URL, _ arguments: [String], in folder: URL) throws -> ChildProcessHandle {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = folder
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return ChildProcessHandle(process: process)
    }

    func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Damages and old versions of store files, made with SQLite directly.
enum SQLiteTestFile {
    /// Takes a store file back to schema version 1: no sequence numbers.
    static func downgradeToSchemaOne(_ path: String) throws {
        let db = try SQLiteConnection(path: path)
        try db.execute("DROP INDEX entries_by_seq")
        try db.execute("ALTER TABLE entries DROP COLUMN seq")
        try db.execute("ALTER TABLE metadata DROP COLUMN seq")
        try db.execute("DELETE FROM state WHERE name IN ('sequence', 'rewritten')")
        // Schema 3 sealed every record with a checksum; schema 1 had none.
        try db.execute("UPDATE entries SET siblings = substr(siblings, 1, length(siblings) - 4)")
        try db.execute("UPDATE state SET value = substr(value, 1, length(value) - 4) WHERE name != 'store-id'")
        try db.execute("UPDATE metadata SET value = substr(value, 1, length(value) - 4)")
        try db.execute("PRAGMA user_version=1")
    }
}
