import Converge
import ConvergeHub
import Dispatch
import Foundation

// converge-hub: the network hub devices sync with over HTTP.
// Exit codes: 0 done (or shut down cleanly); 1 the operation failed (storage, address); 2 bad usage.

/// What `serve` runs with, each field set by one option of the table below.
struct ServeOptions {
    var data: String?
    var database: String?
    var databaseConnections = 8
    var databaseTimeoutSeconds = 10
    var listen: ListenAddress?
    var maximumConnections = 512
    var idleTimeoutSeconds = 60
    var headTimeoutSeconds = 10
    var retireAfterSeconds: UInt64 = 30 * 24 * 3_600
    var maintenanceIntervalSeconds: UInt64 = 60
    var shutdownGraceSeconds = 10
}

/// One option of `serve`: its flag, what it means, and how it sets the options.
struct ServeOption: Sendable {
    let flag: String
    let valueName: String
    let help: String
    let apply: @Sendable (inout ServeOptions, String) -> String?   // an error message, or nil
}

@Sendable func positive(_ text: String) -> Int? { Int(text).flatMap { $0 > 0 ? $0 : nil } }

/// The longest retirement interval: its milliseconds still fit an `Int`.
nonisolated let maximumRetirementSeconds = Int.max / 1_000
/// The longest time the server waits for something (a timeout, an interval, a grace
/// period): it counts them in nanoseconds, which must fit a `UInt64` with room to add.
nonisolated let maximumWaitSeconds = Int(UInt64.max / 2_000_000_000)

/// A positive number of seconds no larger than `maximum`, or `nil`.
@Sendable func positiveSeconds(_ text: String, atMost maximum: Int) -> Int? { positive(text).flatMap { $0 <= maximum ? $0 : nil } }

/// The options of `serve`: one table drives parsing and help.
nonisolated let serveOptions: [ServeOption] = [
    ServeOption(flag: "--data", valueName: "DIR", help: "the folder of the hub's state (hub.sqlite); created if missing") {
        $0.data = $1; return nil
    },
    ServeOption(flag: "--database", valueName: "URL", help: "keep the state in PostgreSQL instead (postgresql://… or libpq's key=value), shared by any number of hubs") {
        $0.database = $1; return nil
    },
    ServeOption(flag: "--database-connections", valueName: "N", help: "PostgreSQL connections this process opens at most (default 8)") {
        guard let value = positive($1) else { return "--database-connections needs a positive number" }
        $0.databaseConnections = value; return nil
    },
    ServeOption(flag: "--database-timeout-seconds", valueName: "S", help: "give up on a PostgreSQL statement or lock wait after this long: answer 503 (default 10)") {
        guard let value = positiveSeconds($1, atMost: maximumWaitSeconds) else {
            return "--database-timeout-seconds needs a positive number of seconds, at most \(maximumWaitSeconds)"
        }
        $0.databaseTimeoutSeconds = value; return nil
    },
    ServeOption(flag: "--listen", valueName: "HOST:PORT", help: "where to listen, e.g. 127.0.0.1:8080 or [::1]:8080 (port 0: any free port)") {
        guard let address = ListenAddress($1) else { return "invalid address \"\($1)\" (expected HOST:PORT)" }
        $0.listen = address; return nil
    },
    ServeOption(flag: "--max-connections", valueName: "N", help: "connections open at once; more are answered 503 (default 512)") {
        guard let value = positive($1) else { return "--max-connections needs a positive number" }
        $0.maximumConnections = value; return nil
    },
    ServeOption(flag: "--idle-timeout-seconds", valueName: "S", help: "close a kept-alive connection idle this long (default 60)") {
        guard let value = positiveSeconds($1, atMost: maximumWaitSeconds) else {
            return "--idle-timeout-seconds needs a positive number of seconds, at most \(maximumWaitSeconds)"
        }
        $0.idleTimeoutSeconds = value; return nil
    },
    ServeOption(flag: "--head-timeout-seconds", valueName: "S", help: "answer 408 to a client that takes longer to send a request head (default 10)") {
        guard let value = positiveSeconds($1, atMost: maximumWaitSeconds) else {
            return "--head-timeout-seconds needs a positive number of seconds, at most \(maximumWaitSeconds)"
        }
        $0.headTimeoutSeconds = value; return nil
    },
    ServeOption(flag: "--retire-after-seconds", valueName: "S", help: "retire a device silent this long, so tombstones can be collected (default 30 days)") {
        guard let value = positiveSeconds($1, atMost: maximumRetirementSeconds) else {
            return "--retire-after-seconds needs a positive number of seconds, at most \(maximumRetirementSeconds)"
        }
        $0.retireAfterSeconds = UInt64(value); return nil
    },
    ServeOption(flag: "--maintenance-interval-seconds", valueName: "S", help: "how often the hub retires silent devices by itself (default 60)") {
        guard let value = positiveSeconds($1, atMost: maximumWaitSeconds) else {
            return "--maintenance-interval-seconds needs a positive number of seconds, at most \(maximumWaitSeconds)"
        }
        $0.maintenanceIntervalSeconds = UInt64(value); return nil
    },
    ServeOption(flag: "--shutdown-grace-seconds", valueName: "S", help: "on SIGTERM or SIGINT, how long requests in flight may take to finish (default 10)") {
        guard let value = positiveSeconds($1, atMost: maximumWaitSeconds) else {
            return "--shutdown-grace-seconds needs a positive number of seconds, at most \(maximumWaitSeconds)"
        }
        $0.shutdownGraceSeconds = value; return nil
    },
]

nonisolated let usage = """
    converge-hub: the hub Converge devices sync with over HTTP (TLS: put nginx in front)

    USAGE
      converge-hub serve (--data DIR | --database URL) --listen HOST:PORT [OPTIONS]
      converge-hub token create (--data DIR | --database URL) --account ACCOUNT

    serve runs the hub: POST /sync (one binary sync message, Authorization: Bearer TOKEN),
    GET /account (the token's account, as text), GET /health, GET /metrics (Prometheus).
    One log line per request on standard error. The state is in one SQLite file (--data) or
    in PostgreSQL (--database): several hubs on one database serve the same accounts behind
    a load balancer. The password may come from the URL, ~/.pgpass or PGPASSWORD.
    SIGTERM or SIGINT stops it cleanly. Its options:
    \(serveOptions.map { "  \("\($0.flag) \($0.valueName)".padding(toLength: 34, withPad: " ", startingAt: 0)) \($0.help)" }.joined(separator: "\n"))

    token create prints a new bearer token for ACCOUNT on standard output. The hub keeps
    only its SHA-256: keep the token, it cannot be shown again.

    Exit codes: 0 done, 1 the operation failed, 2 bad usage.
    """

enum ToolError: Error {
    case usage(String)
    case failed(String)
}

func parseServe(_ arguments: ArraySlice<String>) throws(ToolError) -> ServeOptions {
    var options = ServeOptions()
    var index = arguments.startIndex
    while index < arguments.endIndex {
        let flag = arguments[index]
        guard let option = serveOptions.first(where: { $0.flag == flag }) else { throw .usage("unknown option \(flag) for serve") }
        index += 1
        guard index < arguments.endIndex else { throw .usage("\(flag) needs a value (\(option.valueName))") }
        if let problem = option.apply(&options, arguments[index]) { throw .usage(problem) }
        index += 1
    }
    guard (options.data == nil) != (options.database == nil) else { throw .usage("serve needs either --data DIR or --database URL") }
    guard options.listen != nil else { throw .usage("serve needs --listen HOST:PORT") }
    return options
}

func serve(_ options: ServeOptions) throws(ToolError) -> Never {
    let log = RequestLog()
    let store: any HubStateStore, location: String
    do {
        (store, location) = try openStore(data: options.data, database: options.database,
                                          databaseConnections: options.databaseConnections,
                                          databaseTimeout: .seconds(options.databaseTimeoutSeconds))
    } catch {
        throw .failed("\(error)")
    }
    let configuration = HubConfiguration(retirementIntervalMilliseconds: options.retireAfterSeconds * 1_000,
                                         maintenanceIntervalMilliseconds: options.maintenanceIntervalSeconds * 1_000)
    let service = HubService(store: store, configuration: configuration)
    let server: HTTPServer
    do {
        server = try HTTPServer(
            configuration: HTTPServerConfiguration(address: options.listen!, maximumConnections: options.maximumConnections,
                                                   idleTimeoutMilliseconds: options.idleTimeoutSeconds * 1_000,
                                                   headTimeoutMilliseconds: options.headTimeoutSeconds * 1_000),
            handler: service, observer: HTTPServerObservers([service.metrics, log]))
    } catch {
        throw .failed("\(error)")
    }
    // Signals are handled on a queue, not in a signal handler: stop accepting, let the
    // requests in flight finish within the grace period, write what is unwritten, exit 0.
    let signals = DispatchQueue(label: "converge-hub signals")
    var sources: [DispatchSourceSignal] = []
    for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: signals)
        source.setEventHandler {
            guard !server.isShuttingDown else { return }
            log.event("shutting down", [("signal", name), ("open_connections", "\(server.openConnections)")])
            let drained = server.shutdown(graceMilliseconds: options.shutdownGraceSeconds * 1_000)
            service.stopMaintenance()
            log.event("stopped", [("drained", "\(drained)")])
            exit(0)
        }
        source.resume()
        sources.append(source)
    }
    server.start()
    service.startMaintenance()
    log.event("listening", [("address", server.boundAddress.description), ("storage", location), ("pid", "\(getpid())")])
    withExtendedLifetime(sources) { dispatchMain() }
}

/// The hub's store: the SQLite file in `data`, or the PostgreSQL database at `database`
/// (exactly one is given), and where it is, for the log (never a password).
func openStore(data: String?, database: String?, databaseConnections: Int,
               databaseTimeout: Duration = .seconds(10)) throws(HubError) -> (any HubStateStore, String) {
    if let database {
        let store = try PostgreSQLHubStateStore(connectionString: database, maximumConnections: databaseConnections,
                                                timeout: databaseTimeout)
        return (store, "postgresql \(store.location)")
    }
    let store = try SQLiteHubStateStore(folder: data!)
    return (store, store.path)
}

func createToken(_ arguments: ArraySlice<String>) throws(ToolError) {
    var data: String?, database: String?, account: AccountID?
    var index = arguments.startIndex
    while index < arguments.endIndex {
        let flag = arguments[index]
        guard ["--data", "--database", "--account"].contains(flag) else { throw .usage("unknown option \(flag) for token create") }
        index += 1
        guard index < arguments.endIndex else { throw .usage("\(flag) needs a value") }
        let value = arguments[index]
        if flag == "--data" {
            data = value
        } else if flag == "--database" {
            database = value
        } else {
            guard let parsed = AccountID(value) else {
                throw .usage("invalid account \"\(value)\" (1...\(AccountID.maximumLengthBytes) bytes)")
            }
            account = parsed
        }
        index += 1
    }
    guard (data == nil) != (database == nil) else { throw .usage("token create needs either --data DIR or --database URL") }
    guard let account else { throw .usage("token create needs --account ACCOUNT") }
    do {
        let (store, _) = try openStore(data: data, database: database, databaseConnections: 1)
        print(try HubService.createToken(for: account, in: store, nowMilliseconds: SystemClock().nowMilliseconds()))
    } catch {
        throw .failed("\(error)")
    }
}

func run(_ arguments: [String]) throws(ToolError) {
    if arguments.contains("--help") || arguments.contains("-h") || arguments.first == "help" {
        print(usage)
        return
    }
    guard let command = arguments.first else { throw .usage("no command given") }
    switch command {
    case "serve":
        try serve(try parseServe(arguments.dropFirst()))
    case "token":
        guard arguments.count >= 2 else { throw .usage("token needs a subcommand: token create (--data DIR | --database URL) --account ACCOUNT") }
        guard arguments[1] == "create" else { throw .usage("unknown token subcommand \(arguments[1]) (only: create)") }
        try createToken(arguments.dropFirst(2))
    default:
        throw .usage("unknown command \(command)")
    }
}

do {
    try run(Array(CommandLine.arguments.dropFirst()))
    exit(0)
} catch .usage(let message) {
    FileHandle.standardError.write(Data("converge-hub: \(message)\nRun converge-hub --help for usage.\n".utf8))
    exit(2)
} catch .failed(let message) {
    FileHandle.standardError.write(Data("converge-hub: \(message)\n".utf8))
    exit(1)
}
