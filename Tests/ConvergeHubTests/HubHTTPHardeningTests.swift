import Converge
import ConvergeHub
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("converge-hub: malformed, oversized, slow and excess clients are refused while the hub keeps serving")
struct HubHTTPHardeningTests {
    /// Sends `bytes` on a new connection and returns the status of the answer and whether
    /// the hub then closed the connection.
    static func refusal(_ bytes: [UInt8], port: UInt16) throws -> (status: Int, closed: Bool, text: String) {
        let client = try RawHTTPClient(port: port)
        client.send(bytes)
        let response = try client.readResponse()
        return (response.status, client.isClosedByServer(), response.text)
    }

    @Test func malformedAndOversizedRequestsGet4xxAndTheHubKeepsServing() throws {
        let hub = try HubProcess(data: temporaryFolder("malformed").appendingPathComponent("data"))
        let cases: [(String, [UInt8], Int)] = [
            ("garbage", Array("\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\u{fc}\u{03}\u{03} hello\r\n\r\n".utf8), 400),
            ("no Host", Array("GET /health HTTP/1.1\r\n\r\n".utf8), 400),
            ("bare LF", Array("GET /health HTTP/1.1\nHost: h\n\n".utf8), 400),
            ("HTTP/2 preface", Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8), 505),
            ("oversized header", Array("GET /health HTTP/1.1\r\nHost: h\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n".utf8), 431),
            ("too many headers", Array(("GET /health HTTP/1.1\r\nHost: h\r\n" + String(repeating: "X-A: 1\r\n", count: 100) + "\r\n").utf8), 431),
            ("long request line", Array("GET /\(String(repeating: "a", count: 9_000)) HTTP/1.1\r\nHost: h\r\n\r\n".utf8), 414),
            ("huge Content-Length", Array("POST /sync HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999\r\n\r\n".utf8), 413),
            ("chunked", Array("POST /sync HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".utf8), 501),
            ("two lengths", Array("POST /sync HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab".utf8), 400),
            ("expectation", Array("POST /sync HTTP/1.1\r\nHost: h\r\nExpect: the-unexpected\r\n\r\n".utf8), 417),
        ]
        for (name, bytes, status) in cases {
            let answer = try Self.refusal(bytes, port: hub.port)
            #expect(answer.status == status, "\(name): \(answer.status) \(answer.text)")
            #expect(answer.closed, "\(name): the connection stayed open after a malformed request")
            // The hub goes on serving.
            #expect(try RawHTTPClient(port: hub.port).request("GET", "/health").status == 200, "after \(name)")
        }
        let metrics = try RawHTTPClient(port: hub.port).request("GET", "/metrics").text
        for reason in ["malformed", "headTooLarge", "bodyTooLarge", "unsupportedTransferEncoding", "requestLineTooLong"] {
            #expect(metrics.contains("converge_hub_rejected_requests_total{reason=\"\(reason)\"}"), "no \(reason) in \(metrics)")
        }
        #expect(hub.stop() == 0)
    }

    @Test func aSlowClientGets408AndDoesNotHoldTheHub() throws {
        let hub = try HubProcess(data: temporaryFolder("slow").appendingPathComponent("data"),
                                 extraArguments: ["--head-timeout-seconds", "1"])
        let slow = try RawHTTPClient(port: hub.port)
        let started = Date()
        slow.send("GET /health HTTP/1.1\r\nHost: h\r\n")   // and never the empty line
        // Meanwhile others are served at once.
        #expect(try RawHTTPClient(port: hub.port).request("GET", "/health").status == 200)
        #expect(Date().timeIntervalSince(started) < 0.9)
        let answer = try slow.readResponse()
        let waited = Date().timeIntervalSince(started)
        #expect(answer.status == 408 && waited >= 0.9 && waited < 5, "\(answer.status) after \(waited) s")
        #expect(slow.isClosedByServer())
        // A trickle (one byte at a time) is cut by the same deadline.
        let trickle = try RawHTTPClient(port: hub.port)
        let trickleStarted = Date()
        var status = 0
        for byte in Array("GET /health HTTP/1.1\r\nHost: h\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".utf8) {
            trickle.send([byte])
            usleep(50_000)
            if Date().timeIntervalSince(trickleStarted) > 1.5 { break }
        }
        status = (try? trickle.readResponse().status) ?? 0
        #expect(status == 408)
        #expect(hub.log.contains("rejected=timeout"))
        #expect(hub.stop() == 0)
    }

    @Test func connectionsOverTheCapAreRefusedWith503AtOnce() throws {
        let hub = try HubProcess(data: temporaryFolder("cap").appendingPathComponent("data"), extraArguments: ["--max-connections", "3"])
        let held = try (0..<3).map { _ in try RawHTTPClient(port: hub.port) }
        for client in held { #expect(try client.request("GET", "/health").status == 200) }
        let started = Date()
        let excess = try RawHTTPClient(port: hub.port)
        let refused = try excess.readResponse()
        #expect(refused.status == 503 && refused.headers["retry-after"] == "1")
        #expect(Date().timeIntervalSince(started) < 1)
        // Freeing one lets the next client in.
        held[0].send("GET /health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        #expect(try held[0].readResponse().status == 200)
        var admitted = false
        for _ in 0..<100 where !admitted {
            usleep(10_000)
            admitted = (try? RawHTTPClient(port: hub.port).request("GET", "/health").status) == 200
        }
        #expect(admitted)
        let metrics = try held[1].request("GET", "/metrics").text
        #expect(metrics.contains("converge_hub_refused_connections_total 1") || metrics.contains("converge_hub_refused_connections_total 2"))
        #expect(hub.stop() == 0)
    }

    @Test func aBadSyncMessageIsRefusedWith400AndChangesNothing() async throws {
        let data = temporaryFolder("badmessage").appendingPathComponent("data")
        let token = try HubProcess.createToken(data: data, account: "alice")
        let hub = try HubProcess(data: data)
        let transport = RawHubTransport(port: hub.port, token: token)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", transport: transport, account: "alice")
        phone.set("kept", forKey: "k")
        try await phone.sync()
        var push = try SyncMessage.push(SyncPush(account: "alice", device: "evil", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector()))).encoded()
        push[push.count - 1] ^= 0xFF
        for body in [push, [], Array("hello".utf8), try SyncMessage.upToDate("alice").encoded()] {
            do {
                _ = try transport.post(body)
                Issue.record("accepted \(body)")
            } catch let refused as RawHubTransport.Refused {
                #expect(refused.status == 400, "\(refused.text)")
            }
        }
        let wrongType = try RawHTTPClient(port: hub.port).request("POST", "/sync", headers: [("Authorization", "Bearer \(token)"),
                                                                                              ("Content-Type", "application/json")], body: [1])
        #expect(wrongType.status == 415)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", transport: transport, account: "alice")
        try await tablet.sync()
        #expect(tablet.dictionaryRepresentation.keys.sorted() == ["k"])
        #expect(hub.stop() == 0)
    }
}
