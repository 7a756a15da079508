import Converge
import ConvergeSQLite
import ConvergeSimulation
import ConvergeTestSupport
import Foundation
import Testing

/// Runs the built `converge` binary.
enum ConvergeTool {
    static var binary: URL { ChildProcess.executable("converge") }

    @discardableResult
    static func run(_ arguments: [String], in folder: URL) throws -> ChildProcess.Outcome {
        try ChildProcess.run(binary, arguments, in: folder)
    }
}

@Suite("The converge tool, end to end", .serialized)
struct ConvergeToolTests {
    /// The case: a store in a folder this user may not write could not even be
    /// read. `read` and `conflicts` now open it read-only; a write fails clearly; the file
    /// is unchanged and nothing is created beside it. Run as `nobody` when the tests run as
    /// root (root ignores permissions).
    @Test func aStoreThisUserMayNotWriteCanBeRead() throws {
        let folder = temporaryFolder()
        try ConvergeTool.run(["--store", "s/", "--replica", "laptop", "write", "k", "v"], in: folder)
        let store = folder.appendingPathComponent("s")
        let file = store.appendingPathComponent("converge.sqlite")
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: file.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: store.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: store.path) }
        let before = try Data(contentsOf: file)
        var run: ([String]) throws -> ChildProcess.Outcome = { try ConvergeTool.run($0, in: folder) }
        if getuid() == 0 {
            guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser") else { return }
            // A copy of the tool that `nobody` may run, in a folder it may enter.
            let tool = folder.appendingPathComponent("converge")
            try FileManager.default.copyItem(at: ConvergeTool.binary, to: tool)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: tool.path)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
            run = { try ChildProcess.run(URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", "nobody", "--", tool.path] + $0, in: folder) }
        }
        let read = try run(["--store", store.path, "read"])
        #expect(read.status == 0 && read.output == "{\"k\":\"v\"}\n", "\(read.errors)")
        #expect(try run(["--store", store.path, "read", "k"]).output == "\"v\"\n")
        #expect(try run(["--store", store.path, "conflicts"]).status == 0)
        let write = try run(["--store", store.path, "write", "k", "w"])
        #expect(write.status == 1 && write.errors.contains("read-only"), "\(write.errors)")
        #expect(try Data(contentsOf: file) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.path) == ["converge.sqlite"])
    }

    @Test func writeOnOneStoreSyncBothReadOnTheOther() throws {
        let folder = temporaryFolder()
        #expect(try ConvergeTool.run(["--store", "a/", "--replica", "alice", "write", "greeting", "hello"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "a", "write", "count", "42", "--type", "integer"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "a", "write", "tags", "[\"x\",true,1.5]", "--type", "json"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "b/", "--replica", "bob", "--sync-folder", "shared", "sync"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "a", "--sync-folder", "shared", "sync"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "b", "--sync-folder", "shared", "sync"], in: folder).status == 0)
        let read = try ConvergeTool.run(["--store", "b", "read"], in: folder)
        #expect(read.status == 0)
        #expect(read.output == "{\"count\":42,\"greeting\":\"hello\",\"tags\":[\"x\",true,1.5]}\n")
        #expect(try ConvergeTool.run(["--store", "b", "read", "greeting"], in: folder).output == "\"hello\"\n")

        // Concurrent writes on both, synced: both kept, reported as a conflict.
        try ConvergeTool.run(["--store", "a", "write", "greeting", "hi from a"], in: folder)
        try ConvergeTool.run(["--store", "b", "write", "greeting", "hi from b"], in: folder)
        for store in ["a", "b", "a"] { try ConvergeTool.run(["--store", store, "--sync-folder", "shared", "sync"], in: folder) }
        let conflicts = try ConvergeTool.run(["--store", "a", "conflicts"], in: folder)
        #expect(conflicts.output.contains("hi from a") && conflicts.output.contains("hi from b"))
        #expect(try ConvergeTool.run(["--store", "b", "delete", "count"], in: folder).status == 0)
        for store in ["b", "a"] { try ConvergeTool.run(["--store", store, "--sync-folder", "shared", "sync"], in: folder) }
        #expect(try ConvergeTool.run(["--store", "a", "read", "count"], in: folder).status == 1)
    }

    @Test func badUsageAndFailuresHaveClearMessagesAndExitCodes() throws {
        let folder = temporaryFolder()
        let cases: [([String], Int32, String)] = [
            (["read"], 2, "--store PATH is required"),
            (["--store", "s/", "frobnicate"], 2, "unknown command"),
            (["--store", "s/", "--colour", "read"], 2, "unknown option --colour"),
            (["--store", "s/", "write", "k", "notanumber", "--type", "integer"], 2, "is not an integer"),
            (["--store", "s/", "write", "k", "v", "--type", "blob"], 2, "unknown type"),
            (["--store", "s/", "sync"], 2, "sync needs --hub URL or --sync-folder DIR"),
            (["--store", "s/", "read", "missing"], 1, "no value for key \"missing\""),
            (["--store", "s/", "write", String(repeating: "k", count: 65), "v"], 1, "quota"),
            (["--store", "s/", "--replica", "other", "read"], 2, "it cannot become other"),
            (["--store", "typo/", "read"], 1, "no store at typo/"),
            (["--store", "n/", "--account", "../../escaped", "write", "k", "v"], 2, "invalid account"),
            (["--store", "n/", "--replica", ".laptop", "write", "k", "v"], 2, "invalid replica ID"),
            (["--store", "s/", "delete", "nosuchkey"], 1, "no value for key \"nosuchkey\""),
            (["--store", "s/", "write", "k", "[1, null]", "--type", "json"], 2, "null cannot be stored inside an array"),
            (["--store", "s/", "write", "k", "v", "--file", "/nonexistent"], 1, "cannot read /nonexistent"),
        ]
        try ConvergeTool.run(["--store", "s/", "--replica", "first", "write", "k", "v"], in: folder)
        for (arguments, status, message) in cases {
            let outcome = try ConvergeTool.run(arguments, in: folder)
            #expect(outcome.status == status, "\(arguments): \(outcome.errors)")
            #expect(outcome.errors.contains(message), "\(arguments): \(outcome.errors)")
        }
        try Data("not a database".utf8).write(to: folder.appendingPathComponent("junk.sqlite"))
        let junk = try ConvergeTool.run(["--store", "junk.sqlite", "read"], in: folder)
        #expect(junk.status == 1 && junk.errors.contains("junk.sqlite: not a Converge store"))
        #expect(try ConvergeTool.run(["--help"], in: folder).output.contains("USAGE"))
        // A typo in a store path, or a bad name, created nothing.
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("typo").path))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("n").path))
        // A value larger than an argument list takes, from standard input.
        let big = try ChildProcess.run(URL(fileURLWithPath: "/bin/sh"),
                                       ["-c", "head -c 300000 /dev/zero | tr '\\0' a | \"$0\" --store s/ write big --stdin", ConvergeTool.binary.path],
                                       in: folder)
        #expect(big.status == 0, "\(big.errors)")
        #expect(try ConvergeTool.run(["--store", "s/", "read", "big"], in: folder).output.count == 300_003)
    }

    /// Reproductions of the issue "Hostile and damaged input changes nothing and crashes
    /// nothing": integers outside Int64, infinities, output that cannot be written,
    /// arguments that are not UTF-8.
    @Test func numbersOutputErrorsAndArgumentsAreExact() throws {
        let folder = temporaryFolder()
        for big in ["18446744073709551615", "9223372036854775808", "[1, 9223372036854775808]"] {
            let outcome = try ConvergeTool.run(["--store", "s/", "write", "big", big, "--type", "json"], in: folder)
            #expect(outcome.status == 2 && outcome.errors.contains("larger than the largest integer"), "\(big): \(outcome.errors)")
        }
        #expect(try ConvergeTool.run(["--store", "s/", "write", "big", "9223372036854775807", "--type", "json"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "s/", "write", "inf", "-inf", "--type", "double"], in: folder).status == 0)
        #expect(try ConvergeTool.run(["--store", "s/", "write", "nan", "nan", "--type", "double"], in: folder).status == 2)
        let read = try ConvergeTool.run(["--store", "s/", "read"], in: folder)
        #expect(read.output == "{\"big\":9223372036854775807,\"inf\":{\"double\":\"-Infinity\"}}\n", "\(read.output)")
        // Through a shell: output to a full device, and an argument that is not UTF-8.
        func shell(_ command: String) throws -> ChildProcess.Outcome {
            try ChildProcess.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "\"$0\" " + command, ConvergeTool.binary.path], in: folder)
        }
        let full = try shell("--store s/ read > /dev/full")
        #expect(full.status == 1 && full.errors.contains("cannot write the output"), "\(full.errors)")
        #expect(try shell("--store s/ read missing 2> /dev/full").status == 1)
        let invalid = try shell("--store s/ write \"$(printf 'k\\377')\" v")
        #expect(invalid.status == 2 && invalid.errors.contains("is not valid UTF-8"), "\(invalid.errors)")
        #expect(try ConvergeTool.run(["--store", "s/", "read"], in: folder).output == read.output)
    }

    @Test func threeProcessesConvergeThroughTheSharedFolder() throws {
        let folder = temporaryFolder()
        let names = ["p1", "p2", "p3"]
        // Each process writes its own keys and a shared one, and syncs, all at once.
        var processes: [Process] = []
        for name in names {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            let tool = ConvergeTool.binary.path
            process.arguments = ["-c", (0..<5).map { i in
                "\(tool) --store \(name)/ --replica \(name) write \(name)-\(i) \(i) --type integer && \(tool) --store \(name) write shared \(name)-\(i) && \(tool) --store \(name) --sync-folder shared sync >/dev/null"
            }.joined(separator: " && ")]
            process.currentDirectoryURL = folder
            try process.run()
            processes.append(process)
        }
        for process in processes { process.waitUntilExit(); #expect(process.terminationStatus == 0) }
        for _ in 0..<2 { for name in names { try ConvergeTool.run(["--store", name, "--sync-folder", "shared", "sync"], in: folder) } }
        let reads = try names.map { try ConvergeTool.run(["--store", $0, "read"], in: folder).output }
        #expect(reads[0] == reads[1] && reads[1] == reads[2])
        for name in names { #expect(reads[0].contains("\"\(name)-4\":4")) }
        let states = try names.map { name in
            try ReplicatedKeyValueStore(replicaID: ReplicaID(name)!, storage: SQLiteStorage(path: folder.appendingPathComponent("\(name)/converge.sqlite").path)).replicatedState
        }
        #expect(states[0] == states[1] && states[1] == states[2])
    }

    @Test func theFolderIsCompactedAndBadFilesAreSkipped() throws {
        let folder = temporaryFolder()
        for i in 0..<40 {
            try ConvergeTool.run(["--store", "a/", "--replica", "alice", "write", "k\(i % 3)", "v\(i)"], in: folder)
            try ConvergeTool.run(["--store", "a", "--sync-folder", "shared", "sync"], in: folder)
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("shared/default/alice").path)
        #expect(files.count <= 17, "\(files.count) files")
        // A garbage file in another replica's folder is reported, not fatal.
        let mallory = folder.appendingPathComponent("shared/default/mallory")
        try FileManager.default.createDirectory(at: mallory, withIntermediateDirectories: true)
        try Data("garbage".utf8).write(to: mallory.appendingPathComponent("00000000000000000001.snapshot"))
        let sync = try ConvergeTool.run(["--store", "b/", "--replica", "bob", "--sync-folder", "shared", "sync"], in: folder)
        #expect(sync.status == 0)
        #expect(sync.errors.contains("skipped") && sync.errors.contains("mallory"))
        #expect(try ConvergeTool.run(["--store", "b", "read", "k0"], in: folder).status == 0)
    }
}
