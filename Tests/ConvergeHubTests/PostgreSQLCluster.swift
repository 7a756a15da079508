import ConvergeTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster for the tests: `initdb` into a temporary folder, a server
/// listening only on a Unix socket in that folder, one fresh database per test. Started once
/// per test process; a watchdog stops it (`pg_ctl stop -m immediate`) when the test process
/// is gone, however it ended.
///
/// Runs the server binaries as the `postgres` user when the tests run as root (PostgreSQL
/// refuses to run as root). `.ci/run` installs Debian's `postgresql` when it is missing; set
/// `CONVERGE_POSTGRESQL_BIN` to use binaries elsewhere.
final class PostgreSQLCluster: Sendable {
    let folder: URL
    let port: Int
    let binaries: URL
    /// The user that runs the server (and owns its folder), if not the current one.
    let serverUser: String?

    /// The cluster of this test process, started on first use.
    static let shared: Result<PostgreSQLCluster, Failure> = {
        do throws(Failure) { return .success(try PostgreSQLCluster()) } catch { return .failure(error) }
    }()

    /// The shared cluster, or a failure that says how to install PostgreSQL.
    static func started() throws -> PostgreSQLCluster { try shared.get() }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private init() throws(Failure) {
        guard let binaries = Self.findBinaries() else {
            throw Failure(description: """
                PostgreSQL's server binaries (initdb, pg_ctl) were not found: install Debian's postgresql \
                (apt-get install postgresql; .ci/run does) or set CONVERGE_POSTGRESQL_BIN
                """)
        }
        self.binaries = binaries
        serverUser = getuid() == 0 ? "postgres" : nil
        folder = URL(fileURLWithPath: "/tmp/converge-pg-\(UInt32.random(in: 0...UInt32.max))")
        port = Int.random(in: 20_000...60_000)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            if let serverUser { try Self.run("/bin/chown", [serverUser, folder.path]) }
            try runServerTool("initdb", ["-D", dataFolder.path, "--auth=trust", "-U", "postgres", "-E", "UTF8", "--no-instructions"])
            try runServerTool("pg_ctl", ["-D", dataFolder.path, "-l", folder.appendingPathComponent("server.log").path, "-w",
                                          "-o", "-k \(folder.path) -c listen_addresses='' -p \(port)", "start"])
            try startWatchdog()
        } catch {
            throw Failure(description: "the throwaway PostgreSQL cluster did not start: \(error)")
        }
    }

    var dataFolder: URL { folder.appendingPathComponent("data") }

    /// A cluster of the caller's own (for a test that restarts it), stopped like the shared
    /// one when the test process ends.
    static func makeOwn() throws -> PostgreSQLCluster { try PostgreSQLCluster() }

    /// A new empty database: its name, and its connection URL for `converge-hub --database`.
    func createDatabase() throws -> (name: String, url: String) {
        let name = "converge_test_\(UInt64.random(in: 0...UInt64.max))"
        try psql("CREATE DATABASE \(name)")
        return (name, url(database: name))
    }

    /// The URL of `database` in this cluster (over the Unix socket, as `user`).
    func url(database: String, user: String = "postgres") -> String {
        "postgresql:///\(database)?host=\(folder.path)&port=\(port)&user=\(user)"
    }

    /// Starts psql running `sql` in `database` in the background.
    func startPsql(_ sql: String, database: String) throws -> Process {
        let process = Process()
        process.executableURL = binaries.appendingPathComponent("psql")
        process.arguments = ["-X", "-q", "-h", folder.path, "-p", "\(port)", "-U", "postgres", "-d", database, "-c", sql]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs SQL in `database` with psql, returning what it printed (unaligned, tuples only).
    @discardableResult
    func psql(_ sql: String, database: String = "postgres") throws -> String {
        let outcome = try ChildProcess.run(binaries.appendingPathComponent("psql"),
                                           ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", folder.path, "-p", "\(port)",
                                            "-U", "postgres", "-d", database, "-c", sql], in: folder)
        guard outcome.status == 0 else { throw Failure(description: "psql failed: \(outcome.errors)") }
        return outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Restarts the server; `immediate` stops it as a crash would (no checkpoint), so what
    /// it keeps is what its write-ahead log had on disk.
    func restart(immediate: Bool) throws {
        try runServerTool("pg_ctl", ["-D", dataFolder.path, "-l", folder.appendingPathComponent("server.log").path, "-w",
                                      "-m", immediate ? "immediate" : "fast",
                                      "-o", "-k \(folder.path) -c listen_addresses='' -p \(port)", "restart"])
    }

    /// Stops the server now (a cluster of a test's own, once the test is done with it);
    /// the watchdog then finds nothing left to stop.
    func stop() throws {
        try runServerTool("pg_ctl", ["-D", dataFolder.path, "-m", "immediate", "-w", "stop"])
    }

    // MARK: Processes

    private func runServerTool(_ tool: String, _ arguments: [String]) throws {
        let path = binaries.appendingPathComponent(tool).path
        if let serverUser {
            try Self.run("/usr/sbin/runuser", ["-u", serverUser, "--", path] + arguments)
        } else {
            try Self.run(path, arguments)
        }
    }

    /// A shell that waits for this test process to end, then stops the server. (It looks
    /// in /proc rather than using `kill -0`, which the postgres user may not send to root's
    /// process.)
    private func startWatchdog() throws {
        let stop = "\(binaries.appendingPathComponent("pg_ctl").path) -D \(dataFolder.path) -m immediate stop"
        let script = "while [ -d /proc/\(getpid()) ]; do sleep 1; done; \(stop) >/dev/null 2>&1; rm -rf \(folder.path)"
        let process = Process()
        if let serverUser {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", serverUser, "--", "/bin/sh", "-c", script]
        } else {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", script]
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Runs a tool and waits for it to exit, with posix_spawn and waitpid rather than
    /// Foundation's `Process`, whose reaping of children did not happen here while the
    /// cooperative threads waited for the cluster. Its output goes to a file, not a pipe:
    /// the server `pg_ctl start` leaves running would keep a pipe open. It inherits no
    /// other descriptor.
    private static func run(_ executable: String, _ arguments: [String]) throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("converge-pg-tool-\(UInt64.random(in: 0...UInt64.max)).log")
        defer { try? FileManager.default.removeItem(at: output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else the test process has open reaches the tool, nor the server it may
        // leave running: Foundation's pipes are not close-on-exec, and a server holding a
        // pipe's write end keeps its reader (another test) waiting until the process ends.
        closeInheritedDescriptors(&actions)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure(description: "cannot run \(executable): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        guard exitCode == 0 else {
            let printed = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            throw Failure(description: "\(executable) \(arguments.joined(separator: " ")) failed (\(exitCode)): \(printed)")
        }
    }

    /// Adds to `actions` the closing of every descriptor above standard error:
    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34 and later, looked up at run
    /// time because the Glibc module does not export it), or else each descriptor
    /// /proc/self/fd lists now (racy: another test may open one between the listing and
    /// the spawn).
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np"),
           unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3) == 0 {
            return
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in open.compactMap(Int32.init).sorted() where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }

    private static func findBinaries() -> URL? {
        if let configured = ProcessInfo.processInfo.environment["CONVERGE_POSTGRESQL_BIN"] { return URL(fileURLWithPath: configured) }
        let debian = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: debian.path)) ?? []).compactMap(Int.init).sorted()
        for version in versions.reversed() {
            let folder = debian.appendingPathComponent("\(version)/bin")
            if FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("initdb").path) { return folder }
        }
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let url = URL(fileURLWithPath: String(folder))
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("initdb").path) { return url }
        }
        return nil
    }
}
