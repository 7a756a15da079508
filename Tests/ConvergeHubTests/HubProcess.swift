import Converge
import ConvergeTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The hub storages the end-to-end tests run their bodies on, as GRDB runs one body on
/// several databases.
enum HubStorageKind: String, CaseIterable, Sendable {
    case sqlite
    case postgresql
}

/// Where a hub under test keeps its state: a data folder, or a fresh database in the
/// throwaway PostgreSQL cluster.
struct HubStorage {
    let kind: HubStorageKind
    /// A temporary folder for the test's files (logs, stores).
    let folder: URL
    /// The options that point `converge-hub` at the state: `--data DIR` or `--database URL`.
    let arguments: [String]

    /// A new, empty storage of `kind`.
    init(_ kind: HubStorageKind, name: String) throws {
        self.kind = kind
        folder = temporaryFolder(name)
        switch kind {
        case .sqlite: arguments = ["--data", folder.appendingPathComponent("data").path]
        case .postgresql: arguments = ["--database", try PostgreSQLCluster.started().createDatabase().url]
        }
    }

    /// A storage given by its options.
    init(_ kind: HubStorageKind, folder: URL, arguments: [String]) {
        (self.kind, self.folder, self.arguments) = (kind, folder, arguments)
    }
}

/// The built `converge-hub` binary running as a child process on a free loopback port
/// (it listens on port 0 and logs the port it got).
final class HubProcess {
    let process = Process()
    let storageArguments: [String]
    let logFile: URL
    private(set) var port: UInt16 = 0

    static var executable: URL { ChildProcess.executable("converge-hub") }

    /// Starts `converge-hub serve --data DATA --listen 127.0.0.1:0 EXTRA` and waits until it listens.
    convenience init(data: URL, extraArguments: [String] = []) throws {
        try self.init(storageArguments: ["--data", data.path], logFolder: data.deletingLastPathComponent(), extraArguments: extraArguments)
    }

    /// Starts `converge-hub serve` on `storage` and waits until it listens.
    convenience init(storage: HubStorage, extraArguments: [String] = []) throws {
        try self.init(storageArguments: storage.arguments, logFolder: storage.folder, extraArguments: extraArguments)
    }

    private init(storageArguments: [String], logFolder: URL, extraArguments: [String]) throws {
        self.storageArguments = storageArguments
        logFile = logFolder.appendingPathComponent("hub-\(UInt64.random(in: 0...UInt64.max)).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        process.executableURL = Self.executable
        process.arguments = ["serve"] + storageArguments + ["--listen", "127.0.0.1:0"] + extraArguments
        process.standardError = try FileHandle(forWritingTo: logFile)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let range = log.range(of: #"msg=listening address=127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                port = UInt16(log[range].split(separator: ":").last!)!
                return
            }
            guard process.isRunning else { break }
            usleep(10_000)
        }
        process.terminate()
        throw RawHTTPClient.Failure.malformed("the hub did not start: \(log)")
    }

    /// What the hub logged so far.
    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Sends `signal` and waits for the process to exit; returns its status (or nil if it
    /// did not exit within `timeoutSeconds`).
    @discardableResult
    func stop(signal: Int32 = SIGTERM, timeoutSeconds: Double = 15) -> Int32? {
        if process.isRunning { kill(process.processIdentifier, signal) }
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        guard !process.isRunning else { return nil }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// `converge-hub token create --data DATA --account ACCOUNT`, returning the token.
    static func createToken(data: URL, account: String) throws -> String {
        try createToken(storageArguments: ["--data", data.path], account: account, in: data.deletingLastPathComponent())
    }

    /// `converge-hub token create` on `storage`, returning the token.
    static func createToken(storage: HubStorage, account: String) throws -> String {
        try createToken(storageArguments: storage.arguments, account: account, in: storage.folder)
    }

    private static func createToken(storageArguments: [String], account: String, in folder: URL) throws -> String {
        let outcome = try ChildProcess.run(executable, ["token", "create"] + storageArguments + ["--account", account], in: folder)
        guard outcome.status == 0 else { throw RawHTTPClient.Failure.malformed("token create failed: \(outcome.errors)") }
        return outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A test-only transport: POSTs any bytes to a hub's `/sync` over a raw socket (one
/// connection per exchange), so hostile-input tests can send what the real client
/// (`HubHTTPTransport`) never would.
struct RawHubTransport: SyncTransport {
    let port: UInt16
    let token: String

    struct Refused: Error {
        var status: Int
        var text: String
    }

    func exchange(_ request: [UInt8]) async throws -> [UInt8] {
        try post(request)
    }

    /// Lets `synchronize()` exchange without a task (a test that must not wait for the
    /// cooperative pool).
    func exchangeImmediately(_ request: [UInt8]) throws -> [UInt8]? {
        try post(request)
    }

    func post(_ request: [UInt8]) throws -> [UInt8] {
        let client = try RawHTTPClient(port: port)
        let response = try client.request("POST", "/sync", headers: [("Authorization", "Bearer \(token)"),
                                                                     ("Content-Type", "application/octet-stream")], body: request)
        guard response.status == 200 else { throw Refused(status: response.status, text: response.text) }
        return response.body
    }
}

/// The base URL of a hub listening on `port` of the loopback interface.
func hubURL(_ port: UInt16) -> URL {
    URL(string: "http://127.0.0.1:\(port)")!
}

/// A fresh folder under the system's temporary folder.
func temporaryFolder(_ name: String) -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("converge-hub-tests-\(name)-\(UInt64.random(in: 0...UInt64.max))")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}
