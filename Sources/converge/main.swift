import Converge
import ConvergeHubClient
import ConvergeSQLite
import ConvergeSharedFolder
import Foundation
import Synchronization

// converge: a real Converge store on disk, in the spirit of macOS `defaults`.
// Exit codes: 0 done; 1 the operation failed (no such key, quota, storage); 2 bad usage.

let usage = """
    converge: read and write a Converge store on disk, and sync it through a hub or a
    shared folder

    USAGE
      converge --store PATH [--replica ID] [--account A] [--sync-folder DIR] COMMAND
      converge --store PATH [--replica ID] [--account A] --hub URL [--token TOKEN] COMMAND

    COMMANDS
      write KEY VALUE [--type T]   T: string (default), integer, double, bool, data (base64),
                                   json (arrays and dictionaries)
      write KEY --stdin | --file PATH [--type T]
                                   the value from standard input or a file (any size)
      read [KEY]                   JSON of one value, or of the whole store
      delete KEY
      sync                         exchange changes with the hub (--hub) or through the
                                   sync folder (--sync-folder)
      conflicts [KEY]              keys with concurrent values, with every value
      watch [--interval MS] [--count N]
                                   sync every MS milliseconds (default 1000) and print each
                                   change as a JSON line; stop after N rounds if given

    PATH is a store file, or a folder (the store is then PATH/converge.sqlite). The first
    open records the replica ID (--replica, or a random one); later opens reuse it.
    --account switches the store to that account's data; without it the store keeps its
    account (\(AccountID.default) for a new store, the token's account with --hub).
    --hub URL is a converge-hub (http://HOST:PORT, or the https:// URL of its proxy); the
    token comes from --token or the environment variable CONVERGE_TOKEN.
    Exit codes: 0 done, 1 the operation failed, 2 bad usage.
    """

enum ToolError: Error {
    case usage(String)
    case failed(String)
    /// The hub refused (a wrong token, another account): exit 1, and `watch` stops,
    /// since trying again cannot help.
    case refused(String)
}

struct Options {
    var store: String?
    var replica: String?
    /// The account asked for with --account, if any.
    var account: AccountID?
    var syncFolder: String?
    var hub: URL?
    var token: String?
    var command: [String] = []
}

func parseOptions(_ arguments: [String]) throws(ToolError) -> Options {
    var options = Options()
    var index = 0
    func value(_ flag: String) throws(ToolError) -> String {
        index += 1
        guard index < arguments.count else { throw .usage("\(flag) needs a value") }
        return arguments[index]
    }
    while index < arguments.count {
        let argument = arguments[index]
        switch argument {
        case "--store": options.store = try value(argument)
        case "--replica": options.replica = try value(argument)
        case "--sync-folder": options.syncFolder = try value(argument)
        case "--hub":
            let text = try value(argument)
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw .usage("invalid hub URL \"\(text)\" (http://HOST:PORT or https://HOST)")
            }
            options.hub = url
        case "--token": options.token = try value(argument)
        case "--account":
            let text = try value(argument)
            guard let account = AccountID(text) else { throw .usage("invalid account \"\(text)\"") }
            options.account = account
        case "--help", "-h":
            try say(usage)
            exit(0)
        default:
            if argument.hasPrefix("--") && options.command.isEmpty { throw .usage("unknown option \(argument)") }
            options.command.append(argument)
        }
        index += 1
    }
    return options
}

/// Opens the store: resolves the path, records or checks the replica ID, and the account.
///
/// - Parameter creating: Whether a store that does not exist yet is created (by a write or
///   a sync); reading one that does not exist is an error, so a typo creates nothing.
/// Opens an existing store only to read it: nothing is recorded, switched or created.
func openForReading(_ path: String, options: Options, requestedID: ReplicaID) throws(ToolError) -> ReplicatedKeyValueStore {
    do {
        let storage = try SQLiteStorage(path: path, readOnly: true)
        let recorded = try storage.load()?.metadata["replica-id"].flatMap { ReplicaID(String(decoding: $0, as: UTF8.self)) }
        if let asked = options.replica, let recorded, asked != recorded.rawValue {
            throw ToolError.usage("this store is replica \(recorded); it cannot become \(asked)")
        }
        let store = try ReplicatedKeyValueStore(replicaID: recorded ?? requestedID, storage: storage)
        if let asked = options.account, store.account != asked {
            throw ToolError.failed("this store is on account \(store.account), not \(asked): switching account writes the store")
        }
        return store
    } catch let error as ToolError {
        throw error
    } catch {
        throw .failed("\(error)")
    }
}

/// Opens the store at `--store`: creating it if `creating` (a write or a sync); only to
/// read it if `readOnly` (a read: it then works on a file or folder this process may not
/// write, and changes nothing).
func openStore(_ options: Options, creating: Bool = true, readOnly: Bool = false,
               transport: (any SyncTransport)? = nil) throws(ToolError) -> ReplicatedKeyValueStore {
    guard var path = options.store else { throw .usage("--store PATH is required") }
    // Checked before anything is created: bad input changes nothing.
    let requested = options.replica ?? "r" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    guard let requestedID = ReplicaID(requested), requestedID.isBase else {
        throw .usage("invalid replica ID \"\(requested)\" (1-64 of A-Z a-z 0-9 . _ : @ -, not starting with \".\")")
    }
    var isDirectory: ObjCBool = false
    let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
    if !creating {
        let file = exists && isDirectory.boolValue ? URL(fileURLWithPath: path).appendingPathComponent("converge.sqlite").path : path
        guard exists && FileManager.default.fileExists(atPath: file) else {
            throw .failed("no store at \(file) (a store is created by its first write or sync)")
        }
    }
    if exists, isDirectory.boolValue {
        path = URL(fileURLWithPath: path).appendingPathComponent("converge.sqlite").path
    } else if path.hasSuffix("/") {
        do { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) } catch {
            throw .failed("cannot create \(path): \(error.localizedDescription)")
        }
        path += "converge.sqlite"
    }
    if readOnly { return try openForReading(path, options: options, requestedID: requestedID) }
    do {
        let storage = try SQLiteStorage(path: path)
        // Recorded inside one write transaction, so that processes opening a new store at
        // once agree on one ID: the first records it, the others find it.
        let replica = try storage.recordedReplicaID(recordingIfAbsent: requestedID)
        if let asked = options.replica, asked != replica.rawValue {
            throw ToolError.usage("this store is replica \(replica); it cannot become \(asked)")
        }
        let store: ReplicatedKeyValueStore
        if let transport {
            // A store that never recorded an account (written before it first synced) takes
            // the hub's account with its data; one on another account is switched.
            let recorded = try storage.load()?.metadata["account"].map { String(decoding: $0, as: UTF8.self) }
            let asked = options.account ?? recorded.flatMap { AccountID($0) } ?? .default
            store = try ReplicatedKeyValueStore(replicaID: replica, transport: transport, account: asked, storage: storage)
            if let recorded, recorded != asked.rawValue {
                complain("converge: switched this store from account \(recorded) to \(asked) (\(recorded)'s data is kept aside: --account \(recorded) switches back)\n")
            }
            return store
        } else {
            store = try ReplicatedKeyValueStore(replicaID: replica, storage: storage)
        }
        if let asked = options.account, store.account != asked {
            let previous = store.account
            try store.switchAccount(to: asked)
            complain("converge: switched this store from account \(previous) to \(asked) (\(previous)'s data is kept aside: --account \(previous) switches back)\n")
        }
        return store
    } catch let error as ToolError {
        throw error
    } catch {
        throw .failed("\(error)")
    }
}

func sortedKeys(_ keys: some Sequence<String>) -> [String] {
    keys.sortedByUTF8()
}

func run(_ options: Options) throws(ToolError) {
    guard let name = options.command.first else { throw .usage("no command given") }
    let arguments = Array(options.command.dropFirst())
    var options = options
    if options.hub != nil, !["sync", "watch"].contains(name) {
        // With --hub, every command works on the token's account, as sync does.
        options.account = try tokenAccount(of: hubTransport(options), asked: options.account, tolerateUnreachable: false)
    }
    switch name {
    case "write":
        var rest = arguments
        var type = "string"
        if let at = rest.firstIndex(of: "--type") {
            guard at + 1 < rest.count else { throw .usage("--type needs a value") }
            type = rest[at + 1]
            rest.removeSubrange(at...(at + 1))
        }
        var text: String
        if let at = rest.firstIndex(where: { $0 == "--stdin" || $0 == "--file" }) {
            // Values too large for an argument list (about 128 KB) come from a file or stdin.
            let data: Data
            if rest[at] == "--stdin" {
                data = FileHandle.standardInput.readDataToEndOfFile()
                rest.remove(at: at)
            } else {
                guard at + 1 < rest.count else { throw .usage("--file needs a PATH") }
                guard let contents = FileManager.default.contents(atPath: rest[at + 1]) else { throw .failed("cannot read \(rest[at + 1])") }
                data = contents
                rest.removeSubrange(at...(at + 1))
            }
            guard let decoded = String(data: data, encoding: .utf8) else { throw .usage("the value is not valid UTF-8 text") }
            text = decoded
            // A value piped from `echo` ends with one newline that is not part of it.
            if text.hasSuffix("\n") && type != "data" { text.removeLast() }
            guard rest.count == 1 else { throw .usage("write KEY --stdin (or --file PATH) takes no VALUE") }
        } else {
            guard rest.count == 2 else { throw .usage("write needs KEY VALUE (or KEY --stdin, or KEY --file PATH)") }
            text = rest[1]
        }
        let value = try ValueJSON.parse(text, type: type)
        let store = try openStore(options)
        do { try store.setValue(value, forKey: rest[0]) } catch { throw .failed("\(error)") }
    case "read":
        guard arguments.count <= 1 else { throw .usage("read takes at most one KEY") }
        let store = try openStore(options, creating: false, readOnly: true)
        if let key = arguments.first {
            guard let value = store.value(forKey: key) else { throw .failed("no value for key \"\(key)\"") }
            try say(ValueJSON.text(ValueJSON.object(value)))
        } else {
            try say(ValueJSON.text(store.values.mapValues(ValueJSON.object)))
        }
    case "delete":
        guard arguments.count == 1 else { throw .usage("delete needs KEY") }
        let store = try openStore(options, creating: false)
        guard store.value(forKey: arguments[0]) != nil else { throw .failed("no value for key \"\(arguments[0])\"") }
        do { try store.removeValue(forKey: arguments[0]) } catch { throw .failed("\(error)") }
    case "sync":
        guard arguments.isEmpty else { throw .usage("sync takes no arguments") }
        if options.hub != nil {
            guard options.syncFolder == nil else { throw .usage("give --hub or --sync-folder, not both") }
            let (store, transport) = try openHubStore(options)
            let outcome = try syncWithHub(store)
            let conflicted = store.conflictedKeys.count
            try say("synced with \(transport.hub.absoluteString) as account \(store.account): \(outcome.exchanges) exchange(s); \(outcome.changedKeys.count) key(s) changed here"
                    + (outcome.rejectedKeys.isEmpty ? "" : "; the hub superseded \(outcome.rejectedKeys.count) key(s) to keep the quota")
                    + (conflicted > 0 ? "; \(conflicted) key(s) hold concurrent values (see `conflicts`)" : ""))
            return
        }
        guard let folder = options.syncFolder else { throw .usage("sync needs --hub URL or --sync-folder DIR") }
        let store = try openStore(options)
        let report: SharedFolderSync.Report
        do { report = try SharedFolderSync(folder: folder).synchronize(store) } catch { throw .failed("\(error)") }
        let conflicted = store.conflictedKeys.count
        try say("synced through \(folder): \(report.written == nil ? "nothing new to write" : "wrote \(report.written!)"); read \(report.replicasRead.count) other replica(s); \(report.changedKeys.count) key(s) changed here"
                + (conflicted > 0 ? "; \(conflicted) key(s) hold concurrent values (see `conflicts`)" : ""))
        for skipped in report.skipped { complain("converge: skipped \(skipped)\n") }
        if let notWritten = report.notWritten { throw .failed("this replica's changes could not be written: \(notWritten)") }
    case "conflicts":
        guard arguments.count <= 1 else { throw .usage("conflicts takes at most one KEY") }
        let store = try openStore(options, creating: false, readOnly: true)
        let keys = arguments.first.map { [$0] } ?? store.conflictedKeys
        var result: [String: Any] = [:]
        for key in keys {
            let siblings = store.siblings(forKey: key)
            guard siblings.count > 1 else { continue }
            result[key] = siblings.map { sibling -> [String: Any] in
                ["replica": sibling.dot.replica.rawValue, "counter": NSNumber(value: sibling.dot.counter),
                 "value": sibling.value.map(ValueJSON.object) ?? NSNull(), "wallMilliseconds": NSNumber(value: sibling.timestamp.wallMilliseconds)]
            }
        }
        try say(ValueJSON.text(result))
    case "watch":
        var interval = 1_000, count: Int?
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let text = rest.popFirst(), let number = Int(text), number >= 0 else { throw .usage("\(flag) needs a non-negative integer") }
            switch flag {
            case "--interval": interval = number
            case "--count": count = number
            default: throw .usage("unknown option \(flag) for watch")
            }
        }
        guard options.hub == nil || options.syncFolder == nil else { throw .usage("give --hub or --sync-folder, not both") }
        let store = try options.hub == nil ? openStore(options) : openHubStore(options, tolerateUnreachable: true).store
        if options.syncFolder == nil && options.hub == nil {
            complain("converge: watching this store's own changes only (other processes' writes); give --hub URL or --sync-folder DIR to sync too\n")
        }
        var previous = store.values
        var round = 0
        while count.map({ round < $0 }) ?? true {
            // Other processes writing the same store (a `write` beside this `watch`) are seen
            // here; syncing takes them too.
            do { try store.refresh() } catch { throw .failed("\(error)") }
            if let folder = options.syncFolder {
                do {
                    let report = try SharedFolderSync(folder: folder).synchronize(store)
                    for skipped in report.skipped { complain("converge: skipped \(skipped)\n") }
                    if let notWritten = report.notWritten { complain("converge: this replica's changes could not be written: \(notWritten)\n") }
                } catch { throw .failed("\(error)") }
            }
            if options.hub != nil {
                // A hub that cannot be reached now may be reached later: say so and go on.
                do { _ = try syncWithHub(store) } catch .failed(let message) {
                    complain("converge: \(message)\n")
                }
            }
            let current = store.values
            for key in sortedKeys(Set(previous.keys).union(current.keys)) where previous[key] != current[key] {
                try say(ValueJSON.text(["key": key, "value": current[key].map(ValueJSON.object) ?? NSNull()]))
            }
            previous = current
            round += 1
            if count.map({ round < $0 }) ?? true { usleep(UInt32(min(interval, 3_600_000)) * 1_000) }
        }
    default:
        throw .usage("unknown command \"\(name)\"")
    }
}

/// Opens the store at `--store` with a transport to `--hub`, on the account asked for
/// (`--account`), or else the token's (asked of the hub).
func openHubStore(_ options: Options, tolerateUnreachable: Bool = false) throws(ToolError) -> (store: ReplicatedKeyValueStore, transport: HubHTTPTransport) {
    let transport = try hubTransport(options)
    var options = options
    options.account = try tokenAccount(of: transport, asked: options.account, tolerateUnreachable: tolerateUnreachable)
    return (try openStore(options, transport: transport), transport)
}

/// The transport to `--hub` with the token of `--token` or `CONVERGE_TOKEN`.
func hubTransport(_ options: Options) throws(ToolError) -> HubHTTPTransport {
    guard let hub = options.hub else { throw .usage("--hub URL is required") }
    guard let token = options.token ?? ProcessInfo.processInfo.environment["CONVERGE_TOKEN"], !token.isEmpty else {
        throw .usage("--hub needs a token: --token TOKEN, or CONVERGE_TOKEN in the environment")
    }
    return HubHTTPTransport(hub: hub, token: token)
}

/// The account to open the store on for `transport`'s token: the token's, checked against
/// `asked` (a typo must not switch the store to an empty account), before anything changes.
///
/// - Parameter tolerateUnreachable: For `watch`: if the hub cannot be reached now, go on
///   with `asked`, or the store's own account, and let later rounds reach it.
func tokenAccount(of transport: HubHTTPTransport, asked: AccountID?, tolerateUnreachable: Bool) throws(ToolError) -> AccountID? {
    let account: AccountID
    do {
        account = try blocking { try await transport.account() }
    } catch let error as HubTransportError where error.isTransient && tolerateUnreachable {
        complain("converge: \(error); going on with \(asked.map { "account \($0)" } ?? "the store's account")\n")
        return asked
    } catch let error as HubTransportError where !error.isTransient {
        throw .refused("cannot learn the token's account from \(transport.hub.absoluteString): \(error)")
    } catch {
        throw .failed("cannot learn the token's account from \(transport.hub.absoluteString): \(error)")
    }
    if let asked, asked != account {
        throw .refused("the token belongs to account \(account), not \(asked); nothing changed")
    }
    return account
}

/// What a sync with the hub did.
struct HubSyncOutcome {
    var exchanges = 0
    var changedKeys: Set<String> = []
    var rejectedKeys: Set<String> = []
}

/// Exchanges with the hub until it has nothing more to send at once (the pages of a
/// large state, the acknowledgement of a full state).
///
/// - Throws: `.refused` if the hub refused or its answer cannot be used (retrying will
///   not help), or `.failed` with the reason it could not be reached.
func syncWithHub(_ store: ReplicatedKeyValueStore) throws(ToolError) -> HubSyncOutcome {
    let outcome = Mutex(HubSyncOutcome())
    let observation = store.observe { event in
        guard case .externalChange(let change) = event else { return }
        outcome.withLock { outcome in
            if change.reason == .quotaViolationChange { outcome.rejectedKeys.formUnion(change.keys) } else { outcome.changedKeys.formUnion(change.keys) }
        }
    }
    defer { observation.cancel() }
    repeat {
        outcome.withLock { $0.exchanges += 1 }
        do {
            try blocking { try await store.sync() }
        } catch let error as HubTransportError where !error.isTransient {
            throw .refused("\(error)")
        } catch {
            throw .failed("\(error)")
        }
    } while store.needsAnotherHubExchange && outcome.withLock({ $0.exchanges }) < 100_000
    return outcome.withLock { $0 }
}

/// Runs `body` to completion from synchronous code (the tool's main thread).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}

/// Writes a line to standard output, unbuffered: an output that cannot be written
/// (`read > /dev/full`) is an error, not a silent success.
func say(_ line: String) throws(ToolError) {
    guard writeAll(Array((line + "\n").utf8), to: STDOUT_FILENO) else {
        throw .failed("cannot write the output: \(String(cString: strerror(errno)))")
    }
}

/// Writes to standard error. Never traps: if standard error cannot be written either (a
/// full disk), the exit status still tells.
func complain(_ text: String) {
    _ = writeAll(Array(text.utf8), to: STDERR_FILENO)
}

/// Writes every byte to `descriptor`; `false` (with `errno` set) if it cannot.
func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return false
        }
        offset += written
    }
    return true
}

/// The arguments, refused if one is not valid UTF-8 (it would silently become U+FFFD in a
/// key or value).
func validArguments() throws(ToolError) -> [String] {
    var arguments: [String] = []
    for index in 1..<Int(CommandLine.argc) {
        guard let pointer = CommandLine.unsafeArgv[index], let argument = String(validatingCString: pointer) else {
            throw .usage("argument \(index) is not valid UTF-8")
        }
        arguments.append(argument)
    }
    return arguments
}

do {
    let arguments = try validArguments()
    if arguments.isEmpty { complain(usage + "\n"); exit(2) }
    try run(try parseOptions(arguments))
} catch .usage(let message) {
    complain("converge: \(message)\nRun `converge --help` for usage.\n")
    exit(2)
} catch .failed(let message) {
    complain("converge: \(message)\n")
    exit(1)
} catch .refused(let message) {
    complain("converge: \(message)\n")
    exit(1)
}
