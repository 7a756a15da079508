import Converge
import ConvergeHub
import ConvergeHubClient
import Foundation
import Testing

/// The code of `ConvergeHub.docc/GettingStarted.md` (on a free port), so the article's
/// example runs: the hub it starts answers `/health` and syncs a device with the token.
@Suite("The hub's getting-started article")
struct GettingStartedTests {
    @Test func aHubStartedInProcessServesADevice() async throws {
        let store = try SQLiteHubStateStore(folder: temporaryFolder("getting-started").path)
        let token = try HubService.createToken(for: "family", in: store, nowMilliseconds: SystemClock().nowMilliseconds())
        let service = HubService(store: store)
        let server = try HTTPServer(configuration: HTTPServerConfiguration(address: ListenAddress(host: "127.0.0.1", port: 0)),
                                    handler: service, observer: HTTPServerObservers([service.metrics, RequestLog(write: { _ in })]))
        server.start()
        service.startMaintenance()
        defer {
            _ = server.shutdown(graceMilliseconds: 1_000)
            service.stopMaintenance()
        }
        #expect(try RawHTTPClient(port: server.boundAddress.port).request("GET", "/health").status == 200)
        let port = server.boundAddress.port
        let phone = ReplicatedKeyValueStore(replicaID: "phone", transport: HubHTTPTransport(hub: URL(string: "http://127.0.0.1:\(port)")!, token: token), account: "family")
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", transport: HubHTTPTransport(hub: URL(string: "http://127.0.0.1:\(port)")!, token: token), account: "family")
        try phone.setValue(.string("dark"), forKey: "theme")
        try await phone.sync()
        try await laptop.sync()
        #expect(laptop.string(forKey: "theme") == "dark")
    }
}
