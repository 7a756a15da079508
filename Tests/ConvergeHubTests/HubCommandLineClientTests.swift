import Converge
import ConvergeTestSupport
import Foundation
import Synchronization
import Testing

/// The `converge` tool syncing stores through a `converge-hub`, every one a separate OS
/// process on loopback.
@Suite("converge --hub: stores in separate processes sync through converge-hub")
struct HubCommandLineClientTests {
    static var converge: URL { ChildProcess.executable("converge") }

    /// Runs `converge ARGUMENTS` in `folder`, with CONVERGE_TOKEN unset unless given.
    static func converge(_ arguments: [String], in folder: URL, token: String? = nil) throws -> ChildProcess.Outcome {
        try ChildProcess.run(converge, arguments, in: folder, environment: ["CONVERGE_TOKEN": token])
    }

    /// A `converge-hub` on loopback, with a token for each account it was started with,
    /// and the folder the tests' stores live in.
    struct StartedHub {
        let folder: URL
        let hub: HubProcess
        let url: String
        let tokens: [String: String]
    }

    /// Creates a token for each of `accounts` (in order) in a new temporary folder named
    /// after `name`, then starts a `converge-hub` on its data.
    static func startHub(_ name: String, accounts: [String] = ["alice"]) throws -> StartedHub {
        let folder = temporaryFolder(name)
        let data = folder.appendingPathComponent("data")
        var tokens: [String: String] = [:]
        for account in accounts { tokens[account] = try HubProcess.createToken(data: data, account: account) }
        let hub = try HubProcess(data: data)
        return StartedHub(folder: folder, hub: hub, url: hubURL(hub.port).absoluteString, tokens: tokens)
    }

    @Test func storesInSeparateProcessesConvergeAndARestartedDevicePollsInsteadOfPushingAgain() throws {
        let started = try Self.startHub("cli-converge")
        let (folder, hub, url, token) = (started.folder, started.hub, started.url, started.tokens["alice"]!)
        let devices = ["phone", "tablet", "laptop"]
        for (index, device) in devices.enumerated() {
            let wrote = try Self.converge(["--store", "\(device)/", "--replica", device, "write", "from-\(device)", "\(index)",
                                           "--type", "integer"], in: folder)
            #expect(wrote.status == 0, "\(wrote.errors)")
        }
        // The three sync at once, twice (each process a new store object, the account from
        // the token, the token from the environment), then each holds everyone's keys.
        for _ in 0..<2 {
            let outcomes = Mutex<[String: Result<ChildProcess.Outcome, any Error>]>([:])
            DispatchQueue.concurrentPerform(iterations: devices.count) { index in
                let outcome = Result { try Self.converge(["--store", "\(devices[index])/", "--hub", url, "sync"], in: folder, token: token) }
                outcomes.withLock { $0[devices[index]] = outcome }
            }
            for (device, outcome) in outcomes.withLock({ $0 }) {
                let finished = try outcome.get()
                #expect(finished.status == 0 && finished.output.contains("as account alice"), "\(device): \(finished.output) \(finished.errors)")
            }
        }
        let _ = try Self.converge(["--store", "phone/", "--hub", url, "sync"], in: folder, token: token)
        for device in devices {
            let read = try Self.converge(["--store", "\(device)/", "read"], in: folder)
            #expect(read.status == 0)
            #expect(read.output.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"from-laptop":2,"from-phone":0,"from-tablet":1}"#,
                    "\(device): \(read.output)")
        }
        // A new process on a store that has nothing new polls: its progress was kept.
        let pollsBefore = hub.log.components(separatedBy: "device=tablet kind=poll").count
        let again = try Self.converge(["--store", "tablet/", "--hub", url, "--token", token, "sync"], in: folder)
        #expect(again.status == 0 && again.output.contains("1 exchange(s); 0 key(s) changed here"), "\(again.output)")
        #expect(hub.log.components(separatedBy: "device=tablet kind=poll").count == pollsBefore + 1, "\(hub.log.suffix(600))")
        #expect(hub.stop() == 0)
    }

    @Test func aWrongTokenAnotherAccountOrNoHubExitOneAndChangeNothing() throws {
        let started = try Self.startHub("cli-refused", accounts: ["alice", "bob"])
        let (folder, hub, url, alice) = (started.folder, started.hub, started.url, started.tokens["alice"]!)
        #expect(try Self.converge(["--store", "mallory/", "--replica", "mallory", "write", "secret", "stolen"], in: folder).status == 0)
        let forged = "cvgh_" + String(alice.dropFirst(5).reversed())
        let wrong = try Self.converge(["--store", "mallory/", "--hub", url, "--token", forged, "sync"], in: folder)
        #expect(wrong.status == 1 && wrong.errors.contains("HTTP 401"), "\(wrong.errors)")
        let otherAccount = try Self.converge(["--store", "mallory/", "--account", "bob", "--hub", url, "--token", alice, "sync"], in: folder)
        #expect(otherAccount.status == 1 && otherAccount.errors.contains("the token belongs to account alice, not bob; nothing changed"),
                "\(otherAccount.errors)")
        #expect(!otherAccount.errors.contains("refused: the hub refused"))
        // A typo in --account changed nothing: the store still reads its data.
        #expect(try Self.converge(["--store", "mallory/", "read", "secret"], in: folder).output.contains("stolen"))
        let noToken = try Self.converge(["--store", "mallory/", "--hub", url, "sync"], in: folder)
        #expect(noToken.status == 2 && noToken.errors.contains("CONVERGE_TOKEN"), "\(noToken.errors)")
        let badURL = try Self.converge(["--store", "mallory/", "--hub", "ftp://x", "--token", alice, "sync"], in: folder)
        #expect(badURL.status == 2 && badURL.errors.contains("invalid hub URL"))
        // Nothing reached either account.
        for (account, token) in [("alice", alice)] {
            let reader = try Self.converge(["--store", "reader-\(account)/", "--replica", "reader", "--hub", url, "--token", token, "sync"], in: folder)
            #expect(reader.status == 0, "\(reader.errors)")
            #expect(try Self.converge(["--store", "reader-\(account)/", "read"], in: folder).output.trimmingCharacters(in: .whitespacesAndNewlines) == "{}")
        }
        #expect(hub.stop() == 0)
        // With the hub gone: a clear error, exit 1, and the local write is still there.
        let gone = try Self.converge(["--store", "mallory/", "--hub", url, "--token", alice, "sync"], in: folder)
        #expect(gone.status == 1 && gone.errors.contains("could not be reached"), "\(gone.errors)")
        let kept = try Self.converge(["--store", "mallory/", "read", "secret"], in: folder)
        #expect(kept.output.contains("stolen"), "\(kept.output) \(kept.errors)")
    }

    @Test func withAHubEveryCommandWorksOnTheTokensAccount() throws {
        let started = try Self.startHub("cli-token-account", accounts: ["alice", "bob"])
        let (folder, hub, url) = (started.folder, started.hub, started.url)
        let (alice, bob) = (started.tokens["alice"]!, started.tokens["bob"]!)
        #expect(try Self.converge(["--store", "s/", "--replica", "shared", "--hub", url, "--token", bob, "sync"], in: folder).status == 0)
        // The store is on bob's account now; a write with alice's token goes to alice's.
        let wrote = try Self.converge(["--store", "s/", "--hub", url, "--token", alice, "write", "k2", "v2"], in: folder)
        #expect(wrote.status == 0, "\(wrote.errors)")
        #expect(try Self.converge(["--store", "s/", "--hub", url, "--token", alice, "sync"], in: folder).status == 0)
        let reader = try Self.converge(["--store", "r/", "--replica", "reader", "--hub", url, "--token", alice, "sync"], in: folder)
        #expect(reader.status == 0)
        #expect(try Self.converge(["--store", "r/", "read", "k2"], in: folder).output.contains("v2"))
        #expect(hub.stop() == 0)
        // With the hub down, watch starts anyway on the store's account, says so, and keeps trying.
        let watch = try Self.converge(["--store", "s/", "--hub", url, "--token", alice, "watch", "--interval", "50", "--count", "2"], in: folder)
        #expect(watch.status == 0 && watch.errors.contains("could not be reached"), "\(watch.errors)")
    }

    @Test func watchWithAHubPrintsAnotherDevicesChanges() throws {
        let started = try Self.startHub("cli-watch")
        let (folder, hub, url, token) = (started.folder, started.hub, started.url, started.tokens["alice"]!)
        let watcher = Process()
        watcher.executableURL = Self.converge
        watcher.arguments = ["--store", "watcher/", "--replica", "watcher", "--hub", url, "--token", token, "watch", "--interval", "100",
                             "--count", "60"]
        watcher.currentDirectoryURL = folder
        let output = Pipe()
        watcher.standardOutput = output
        watcher.standardError = FileHandle.nullDevice
        try watcher.run()
        #expect(try Self.converge(["--store", "writer/", "--replica", "writer", "write", "county", "Surrey"], in: folder).status == 0)
        #expect(try Self.converge(["--store", "writer/", "--hub", url, "--token", token, "sync"], in: folder).status == 0)
        watcher.waitUntilExit()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(watcher.terminationStatus == 0)
        #expect(printed.contains(#"{"key":"county","value":"Surrey"}"#), "\(printed)")
        #expect(hub.stop() == 0)
    }

    /// Issue 11's backup reproduction through `converge-hub`, where the restored store
    /// writes as many new writes as the restore lost before it syncs again: its counters
    /// then equal what the hub holds, and only the write sessions show the reuse. Every
    /// process is a new store object (a new session), the backup a `cp` of the store folder.
    @Test func aStoreRestoredFromABackupThatWritesAsManyAsItLostLosesNothing() throws {
        let started = try Self.startHub("cli-restored-same-count")
        let (folder, hub, url, token) = (started.folder, started.hub, started.url, started.tokens["alice"]!)
        func run(_ arguments: [String]) throws {
            let outcome = try Self.converge(arguments, in: folder, token: token)
            #expect(outcome.status == 0, "\(arguments): \(outcome.errors)")
        }
        func sync(_ store: String) throws { try run(["--store", "\(store)/", "--hub", url, "sync"]) }
        try run(["--store", "a/", "--replica", "alice-laptop", "write", "base", "1"])
        try run(["--store", "b/", "--replica", "bob-phone", "write", "b", "1"])
        for store in ["a", "b", "a"] { try sync(store) }
        let manager = FileManager.default
        let store = folder.appendingPathComponent("a"), backup = folder.appendingPathComponent("a-backup")
        try manager.copyItem(at: store, to: backup)
        try run(["--store", "a/", "write", "late1", "1"])
        try run(["--store", "a/", "write", "late2", "1"])
        for store in ["a", "b"] { try sync(store) }
        try manager.removeItem(at: store)
        try manager.copyItem(at: backup, to: store)
        try run(["--store", "a/", "write", "fresh1", "1"])
        try run(["--store", "a/", "write", "fresh2", "1"])
        for _ in 0..<3 { for store in ["a", "b"] { try sync(store) } }
        let every = #"{"b":"1","base":"1","fresh1":"1","fresh2":"1","late1":"1","late2":"1"}"#
        for store in ["a", "b"] {
            let read = try Self.converge(["--store", "\(store)/", "read"], in: folder)
            #expect(read.output.trimmingCharacters(in: .whitespacesAndNewlines) == every, "\(store): \(read.output)")
        }
        #expect(hub.stop() == 0)
    }

    /// The restore of `aStoreRestoredFromABackupThatWritesAsManyAsItLostLosesNothing`, found
    /// in another account: the restored store writes as many as it lost in account "one",
    /// then syncs account "two" first (its token), which shows the reuse, so the store starts
    /// a new incarnation there. Its writes in "one", kept aside, must be re-stamped too, or
    /// back in "one" the hub takes them for its own and both sides lose writes.
    @Test func aStoreRestoredFromABackupFoundInAnotherAccountLosesNothing() throws {
        let started = try Self.startHub("cli-restored-other-account", accounts: ["one", "two"])
        let (folder, hub, url) = (started.folder, started.hub, started.url)
        func run(_ arguments: [String], account: String) throws {
            let outcome = try Self.converge(arguments + ["--hub", url], in: folder, token: started.tokens[account]!)
            #expect(outcome.status == 0, "\(arguments): \(outcome.errors)")
        }
        func write(_ key: String, in account: String) throws { try run(["--store", "a/", "write", key, "1"], account: account) }
        func sync(_ store: String, in account: String) throws { try run(["--store", "\(store)/", "sync"], account: account) }
        try run(["--store", "a/", "--replica", "alice-laptop", "write", "base", "1"], account: "one")
        try run(["--store", "b/", "--replica", "bob-phone", "sync"], account: "one")
        try sync("a", in: "one")
        try write("t1", in: "two")
        try sync("a", in: "two")
        try sync("a", in: "one")
        let manager = FileManager.default
        let store = folder.appendingPathComponent("a"), backup = folder.appendingPathComponent("a-backup")
        try manager.copyItem(at: store, to: backup)
        try write("late1", in: "one")
        try write("late2", in: "one")
        try sync("a", in: "one")
        try write("t2", in: "two")
        try sync("a", in: "two")
        try manager.removeItem(at: store)
        try manager.copyItem(at: backup, to: store)
        try write("fresh1", in: "one")
        try write("fresh2", in: "one")
        for _ in 0..<3 { try sync("a", in: "two") }
        for _ in 0..<3 { for store in ["a", "b"] { try sync(store, in: "one") } }
        let every = #"{"base":"1","fresh1":"1","fresh2":"1","late1":"1","late2":"1"}"#
        for store in ["a", "b"] {
            let read = try Self.converge(["--store", "\(store)/", "read"], in: folder)
            #expect(read.output.trimmingCharacters(in: .whitespacesAndNewlines) == every, "\(store): \(read.output)")
        }
        try sync("a", in: "two")
        let two = try Self.converge(["--store", "a/", "read"], in: folder)
        #expect(two.output.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"t1":"1","t2":"1"}"#, "\(two.output)")
        #expect(hub.stop() == 0)
    }
}
