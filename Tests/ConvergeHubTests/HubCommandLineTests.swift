import Converge
import ConvergeHub
import ConvergeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("converge-hub: commands, health, metrics and shutdown, through the built binary")
struct HubCommandLineTests {
    @Test func tokenCreatePrintsANewTokenEachTimeAndKeepsOnlyItsHash() throws {
        let folder = temporaryFolder("token")
        let data = folder.appendingPathComponent("data")
        let first = try HubProcess.createToken(data: data, account: "alice")
        let second = try HubProcess.createToken(data: data, account: "alice")
        #expect(first.hasPrefix("cvgh_") && first.count == 48 && first != second)
        #expect(BearerToken.isWellFormed(first))
        // The database holds the hash, never the token.
        let file = try Data(contentsOf: data.appendingPathComponent("hub.sqlite"))
            + ((try? Data(contentsOf: data.appendingPathComponent("hub.sqlite-wal"))) ?? Data())
        #expect(file.range(of: Data(first.utf8)) == nil)
        #expect(file.range(of: Data(BearerToken.hash(first))) != nil)
    }

    @Test(arguments: [
        (["serve", "--listen", "127.0.0.1:0"], "serve needs either --data DIR or --database URL"),
        (["serve", "--data", "d", "--database", "dbname=x", "--listen", "127.0.0.1:0"], "serve needs either --data DIR or --database URL"),
        (["serve", "--database", "dbname=x", "--listen", "127.0.0.1:0", "--database-connections", "0"], "--database-connections needs a positive number"),
        (["serve", "--data", "d"], "serve needs --listen HOST:PORT"),
        (["serve", "--data", "d", "--listen", "localhost"], "invalid address"),
        (["serve", "--data", "d", "--listen", "127.0.0.1:0", "--max-connections", "0"], "--max-connections needs a positive number"),
        (["serve", "--data", "d", "--listen", "127.0.0.1:0", "--bogus", "1"], "unknown option --bogus"),
        // Milliseconds past an Int trapped (a crash, not a usage error).
        (["serve", "--data", "d", "--listen", "127.0.0.1:0", "--retire-after-seconds", "9223372036854776"],
         "--retire-after-seconds needs a positive number of seconds, at most 9223372036854775"),
        (["token", "create", "--data", "d"], "token create needs --account ACCOUNT"),
        (["token", "create", "--account", "a"], "token create needs either --data DIR or --database URL"),
        (["token", "create", "--data", "d", "--account", ""], "invalid account"),
        (["token", "delete"], "unknown token subcommand"),
        (["frobnicate"], "unknown command frobnicate"),
        ([], "no command given"),
    ] + Self.waitsTooLongToCount)
    func badUsageExitsTwoWithAMessage(arguments: [String], message: String) throws {
        let folder = temporaryFolder("usage")
        let outcome = try ChildProcess.run(HubProcess.executable, arguments, in: folder)
        #expect(outcome.status == 2)
        #expect(outcome.errors.contains(message), "\(outcome.errors)")
    }

    /// The options the server waits for, each given more seconds than it can count: waits
    /// are counted in nanoseconds, and a value that passed a milliseconds bound trapped later.
    static let waitsTooLongToCount = ["--idle-timeout-seconds", "--head-timeout-seconds", "--maintenance-interval-seconds",
                                      "--shutdown-grace-seconds", "--database-timeout-seconds"].map { option in
        (["serve", "--database", "dbname=x", "--listen", "127.0.0.1:0", option, "20000000000"],
         "\(option) needs a positive number of seconds, at most 9223372036")
    }

    @Test func helpExitsZeroAndNamesEveryCommand() throws {
        let outcome = try ChildProcess.run(HubProcess.executable, ["--help"], in: temporaryFolder("help"))
        #expect(outcome.status == 0)
        #expect(outcome.output.contains("converge-hub serve (--data DIR | --database URL) --listen HOST:PORT"))
        #expect(outcome.output.contains("converge-hub token create (--data DIR | --database URL) --account ACCOUNT"))
        #expect(outcome.output.contains("--database URL"))
    }

    @Test func anAddressInUseOrAFolderThatCannotBeMadeExitsOne() throws {
        let folder = temporaryFolder("failures")
        let hub = try HubProcess(data: folder.appendingPathComponent("data"))
        let taken = try ChildProcess.run(HubProcess.executable, ["serve", "--data", "other", "--listen", "127.0.0.1:\(hub.port)"], in: folder)
        #expect(taken.status == 1 && taken.errors.contains("cannot bind"), "\(taken.errors)")
        _ = FileManager.default.createFile(atPath: folder.appendingPathComponent("file").path, contents: Data("x".utf8))
        let blocked = try ChildProcess.run(HubProcess.executable, ["token", "create", "--data", "file/data", "--account", "a"], in: folder)
        #expect(blocked.status == 1 && blocked.errors.contains("cannot create"), "\(blocked.errors)")
        let foreign = folder.appendingPathComponent("foreign")
        try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: true)
        try Data("not a database at all, not even close".utf8).write(to: foreign.appendingPathComponent("hub.sqlite"))
        let refused = try ChildProcess.run(HubProcess.executable, ["token", "create", "--data", "foreign", "--account", "a"], in: folder)
        #expect(refused.status == 1 && refused.errors.contains("hub.sqlite"), "\(refused.errors)")
        #expect(try Data(contentsOf: foreign.appendingPathComponent("hub.sqlite")) == Data("not a database at all, not even close".utf8))
        #expect(hub.stop() == 0)
    }

    @Test func healthAnswers200AndMetricsArePrometheusText() throws {
        let hub = try HubProcess(data: temporaryFolder("health").appendingPathComponent("data"))
        let client = try RawHTTPClient(port: hub.port)
        let health = try client.request("GET", "/health")
        #expect(health.status == 200 && health.text == "ok\n")
        #expect(health.headers["date"] != nil)
        // Same connection (kept alive): unknown paths and wrong methods, then the metrics.
        #expect(try client.request("GET", "/nowhere").status == 404)
        let wrongMethod = try client.request("GET", "/sync")
        #expect(wrongMethod.status == 405 && wrongMethod.headers["allow"] == "POST")
        let metrics = try client.request("GET", "/metrics")
        #expect(metrics.status == 200 && metrics.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        for name in ["converge_hub_syncs_total{kind=\"push\"} 0", "# TYPE converge_hub_sync_duration_seconds histogram",
                     "converge_hub_rejected_requests_total{reason=\"not_found\"} 1", "converge_hub_open_connections 1",
                     "converge_hub_responses_total{code=\"200\"} 1", "converge_hub_accounts 0"] {
            #expect(metrics.text.contains(name), "missing \(name)")
        }
        // One structured line per request.
        #expect(hub.log.contains("msg=request method=GET path=/health status=200"))
        #expect(hub.log.contains("path=/nowhere status=404") && hub.log.contains("rejected=not_found"))
        #expect(hub.stop() == 0)
    }

    @Test func sigtermLetsTheRequestInFlightFinishThenExitsZero() throws {
        let data = temporaryFolder("sigterm").appendingPathComponent("data")
        let token = try HubProcess.createToken(data: data, account: "alice")
        let hub = try HubProcess(data: data)
        let idle = try RawHTTPClient(port: hub.port)
        #expect(try idle.request("GET", "/health").status == 200)
        // A push whose body is still arriving when the signal comes.
        let push = try SyncMessage.push(SyncPush(account: "alice", device: "phone",
                                                 delta: ReplicatedMap.Delta(entries: [:], context: VersionVector()))).encoded()
        let inFlight = try RawHTTPClient(port: hub.port)
        inFlight.send("POST /sync HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer \(token)\r\nContent-Length: \(push.count)\r\n\r\n")
        inFlight.send(Array(push.prefix(3)))
        usleep(200_000)
        kill(hub.process.processIdentifier, SIGTERM)
        usleep(300_000)
        #expect(hub.process.isRunning, "the hub exited with a request in flight")
        #expect(idle.isClosedByServer(), "an idle connection stays open during shutdown")
        #expect(throws: RawHTTPClient.Failure.self) { try RawHTTPClient(port: hub.port).request("GET", "/health") }
        inFlight.send(Array(push.dropFirst(3)))
        let answer = try inFlight.readResponse()
        #expect(answer.status == 200 && answer.headers["connection"] == "close")
        #expect(try SyncMessage(encoded: answer.body) != .upToDate("alice"))
        #expect(hub.stop(timeoutSeconds: 15) == 0)
        #expect(hub.log.contains("msg=\"shutting down\" signal=SIGTERM") && hub.log.contains("msg=stopped drained=true"))
    }
}
