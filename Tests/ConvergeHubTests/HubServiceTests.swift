import Converge
@testable import ConvergeHub
import Foundation
import Synchronization
import Testing

@Suite("Hub service in process: durable state, several processes on one store, logs")
struct HubServiceTests {
    /// A request as a device's transport would send it.
    static func syncRequest(_ body: [UInt8], token: String) -> HTTPRequest {
        HTTPRequest(head: HTTPRequestHead(method: "POST", target: "/sync", minorVersion: 1,
                                          headers: HTTPHeaders([("Host", "h"), ("Authorization", "Bearer \(token)"),
                                                                ("Content-Length", "\(body.count)")]),
                                          contentLength: body.count, keepAlive: true, expectsContinue: false),
                    body: body)
    }

    /// A transport that hands requests to a service in this process.
    struct ServiceTransport: SyncTransport {
        let service: HubService
        let token: String

        func exchange(_ request: [UInt8]) async throws -> [UInt8] { try exchangeImmediately(request)! }

        func exchangeImmediately(_ request: [UInt8]) throws -> [UInt8]? {
            let response = service.respond(to: HubServiceTests.syncRequest(request, token: token))
            guard response.status == .ok else { throw ConvergeError.unreachable("\(response.status)") }
            return response.body
        }
    }

    @Test func twoHubsOnOneStoreNeverOverwriteEachOthersCommits() throws {
        // Two services over one database stand for two hub processes sharing it: each holds
        // a stale copy of the account after the other wrote, and must redo, not overwrite.
        let folder = temporaryFolder("twohubs").path
        let store = try SQLiteHubStateStore(folder: folder)
        let token = try HubService.createToken(for: "alice", in: store, nowMilliseconds: 0)
        let first = HubService(store: store), second = HubService(store: try SQLiteHubStateStore(folder: folder))
        let devices = (0..<6).map { index in
            ReplicatedKeyValueStore(replicaID: ReplicaID("d\(index)")!,
                                    transport: ServiceTransport(service: index % 2 == 0 ? first : second, token: token),
                                    account: "alice")
        }
        for round in 0..<5 {
            for (index, device) in devices.enumerated() {
                device.set(Int64(round), forKey: "d\(index)-r\(round)")
                #expect(device.synchronize())
            }
        }
        for device in devices { #expect(device.synchronize()) }
        let reader = ReplicatedKeyValueStore(replicaID: "reader", transport: ServiceTransport(service: first, token: token), account: "alice")
        #expect(reader.synchronize())
        #expect(reader.dictionaryRepresentation.count == 30)
        #expect(try store.loadAccount("alice")!.revision > 30)
    }

    @Test func aDamagedAccountIsRefusedNotReset() throws {
        let folder = temporaryFolder("damaged").path
        let store = try SQLiteHubStateStore(folder: folder)
        let token = try HubService.createToken(for: "alice", in: store, nowMilliseconds: 0)
        let service = HubService(store: store)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", transport: ServiceTransport(service: service, token: token), account: "alice")
        phone.set("v", forKey: "k")
        #expect(phone.synchronize())
        let stored = try #require(try store.loadAccount("alice"))
        var damaged = stored.state
        damaged[0] = 0x00
        // Written behind the hub's back with a valid checksum (a bug, a foreign writer): the
        // checksum passes, the decoder refuses it.
        #expect(try store.storeAccount("alice", state: damaged, replacing: stored.revision) != nil)
        let restarted = HubService(store: try SQLiteHubStateStore(folder: folder))
        let poll = try SyncMessage.poll(SyncPoll(account: "alice", device: "phone", digest: 0)).encoded()
        let response = restarted.respond(to: Self.syncRequest(poll, token: token))
        #expect(response.status == .serviceUnavailable && String(decoding: response.body, as: UTF8.self).contains("cannot be read"))
        #expect(try store.loadAccount("alice")!.state == damaged, "the hub must not overwrite what it cannot read")
    }

    @Test func groupCommitGivesEveryWriterItsOwnOutcomeAndBatchesConcurrentOnes() {
        let commits = GroupCommit<Int, Int>()
        let batches = Mutex<[Int]>([])
        let outcomes = Mutex<[Int: Int]>([:])
        let group = DispatchGroup()
        for writer in 0..<64 {
            group.enter()
            Thread {
                let outcome = commits.submit(writer) { writes in
                    batches.withLock { $0.append(writes.count) }
                    usleep(2_000)  // a flush of the disk
                    return writes.map { $0 * 10 }
                }
                outcomes.withLock { $0[writer] = outcome }
                group.leave()
            }.start()
        }
        group.wait()
        #expect(outcomes.withLock { $0 } == Dictionary(uniqueKeysWithValues: (0..<64).map { ($0, $0 * 10) }))
        let sizes = batches.withLock { $0 }
        #expect(sizes.reduce(0, +) == 64)
        #expect(sizes.count < 64, "64 concurrent writers never shared a batch: \(sizes)")
    }

    @Test func logLinesAreKeyValuePairsWithQuotedValues() {
        let lines = Mutex<[String]>([])
        let log = RequestLog { line in lines.withLock { $0.append(line) } }
        log.requestFinished(HTTPRequestRecord(method: "POST", path: "/sync", status: 401, bytesReceived: 10, bytesSent: 20,
                                              durationSeconds: 0.0004126, remote: "127.0.0.1:5", rejection: "unauthorized",
                                              logFields: [("error", "a \"quoted\" value\nwith a newline")]))
        let line = lines.withLock { $0[0] }
        #expect(line.hasSuffix("\n") && line.split(separator: "\n").count == 1)
        #expect(line.contains(" level=info msg=request method=POST path=/sync status=401 remote=127.0.0.1:5 bytes_in=10 bytes_out=20 duration_ms=0.413 rejected=unauthorized"))
        #expect(line.contains(#"error="a \"quoted\" value\nwith a newline""#))
        #expect(RequestLog.milliseconds(1.5) == "1500.000" && RequestLog.milliseconds(0.0000004) == "0.000")
        #expect(RequestLog.timestamp().count == "2026-01-01T00:00:00.000Z".count)
    }
}
