import Converge
import ConvergeHub
import ConvergeHubClient
import ConvergeSimulation
import ConvergeTestSupport
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("converge-hub: devices sync through the built binary over loopback, on each storage (SQLite, PostgreSQL)")
struct HubSyncEndToEndTests {
    @Test(arguments: HubStorageKind.allCases)
    func twoDevicesSyncThroughTheHubAndTheHubResumesAfterARestart(_ kind: HubStorageKind) async throws {
        let storage = try HubStorage(kind, name: "roundtrip")
        let token = try HubProcess.createToken(storage: storage, account: "alice")
        var hub = try HubProcess(storage: storage)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", transport: HubHTTPTransport(hub: hubURL(hub.port), token: token), account: "alice")
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", transport: HubHTTPTransport(hub: hubURL(hub.port), token: token), account: "alice")
        phone.set(["Surrey", "Kent"], forKey: "FavouriteCounties")
        phone.set(Int64(42), forKey: "answer")
        try await phone.sync()
        let changed = Mutex<[String]>([])
        let observer = NotificationCenter.default.addObserver(forName: ReplicatedKeyValueStore.didChangeExternallyNotification,
                                                              object: tablet, queue: nil) { note in
            changed.withLock { $0 += (note.userInfo?[ReplicatedKeyValueStore.changedKeysKey] as? [String]) ?? [] }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try await tablet.sync()
        #expect(tablet.array(forKey: "FavouriteCounties") as? [String] == ["Surrey", "Kent"])
        #expect(tablet.longLong(forKey: "answer") == 42)
        #expect(changed.withLock { $0.sorted() } == ["FavouriteCounties", "answer"])
        // A steady-state exchange is a poll answered "up to date".
        try await tablet.sync()
        let metrics = try RawHTTPClient(port: hub.port).request("GET", "/metrics").text
        #expect(metrics.contains("converge_hub_syncs_total{kind=\"push\"} 2"), "\(metrics)")
        #expect(metrics.contains("converge_hub_syncs_total{kind=\"poll\"} 1"))
        #expect(metrics.contains("converge_hub_accounts 1"))
        #expect(hub.log.contains("account=alice device=tablet kind=poll answer=up-to-date"))
        // Restart on the same storage: the hub resumes where it was.
        #expect(hub.stop() == 0)
        hub = try HubProcess(storage: storage)
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", transport: HubHTTPTransport(hub: hubURL(hub.port), token: token), account: "alice")
        try await laptop.sync()
        #expect(laptop.longLong(forKey: "answer") == 42)
        #expect(hub.stop() == 0)
    }

    @Test(arguments: HubStorageKind.allCases)
    func aWrongTokenGets401AnotherAccountsTokenGets403AndNothingChanges(_ kind: HubStorageKind) async throws {
        let storage = try HubStorage(kind, name: "tokens")
        let alice = try HubProcess.createToken(storage: storage, account: "alice")
        let bob = try HubProcess.createToken(storage: storage, account: "bob")
        let hub = try HubProcess(storage: storage)
        let intruder = ReplicatedKeyValueStore(replicaID: "intruder", transport: HubHTTPTransport(hub: hubURL(hub.port), token: bob), account: "alice")
        intruder.set("stolen", forKey: "secret")
        await #expect(throws: HubTransportError.self) { try await intruder.sync() }
        let forged = "cvgh_" + String(alice.dropFirst(5).reversed())
        let guesser = ReplicatedKeyValueStore(replicaID: "guesser", transport: HubHTTPTransport(hub: hubURL(hub.port), token: forged), account: "alice")
        guesser.set("guessed", forKey: "secret")
        do {
            try await guesser.sync()
            Issue.record("a forged token was accepted")
        } catch let refused as HubTransportError {
            #expect(refused == .refused(status: 401, message: "invalid token"))
        }
        do {
            try await intruder.sync()
        } catch HubTransportError.refused(let status, let message) {
            #expect(status == 403 && message.contains("belongs to account bob"))
        }
        // No token at all.
        let bare = try RawHTTPClient(port: hub.port).request("POST", "/sync", body: [1, 2, 3])
        #expect(bare.status == 401 && bare.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
        // Alice's own device sees nothing of it, and bob's account holds nothing.
        let phone = ReplicatedKeyValueStore(replicaID: "phone", transport: HubHTTPTransport(hub: hubURL(hub.port), token: alice), account: "alice")
        try await phone.sync()
        #expect(phone.dictionaryRepresentation.isEmpty)
        let bobsPhone = ReplicatedKeyValueStore(replicaID: "phone", transport: HubHTTPTransport(hub: hubURL(hub.port), token: bob), account: "bob")
        try await bobsPhone.sync()
        #expect(bobsPhone.dictionaryRepresentation.isEmpty)
        let metrics = try RawHTTPClient(port: hub.port).request("GET", "/metrics").text
        #expect(metrics.contains("converge_hub_rejected_requests_total{reason=\"unauthorized\"} 2"), "\(metrics)")
        #expect(metrics.contains("converge_hub_rejected_requests_total{reason=\"wrong_account\"} 2"))
        #expect(hub.stop() == 0)
    }

    @Test(arguments: HubStorageKind.allCases)
    func accountsNeverSeeEachOthersKeys(_ kind: HubStorageKind) async throws {
        let storage = try HubStorage(kind, name: "accounts")
        let alice = try HubProcess.createToken(storage: storage, account: "alice")
        let bob = try HubProcess.createToken(storage: storage, account: "bob")
        let hub = try HubProcess(storage: storage)
        let stores = [("alice", alice), ("bob", bob)].flatMap { account, token in
            (0..<2).map { ReplicatedKeyValueStore(replicaID: ReplicaID("\(account)-\($0)")!,
                                                  transport: HubHTTPTransport(hub: hubURL(hub.port), token: token), account: AccountID(account)!) }
        }
        for (index, store) in stores.enumerated() { store.set("\(index)", forKey: "\(store.account)-key-\(index)") }
        for _ in 0..<2 { for store in stores { try await store.sync() } }
        for store in stores {
            let keys = store.dictionaryRepresentation.keys.sorted()
            #expect(keys.count == 2 && keys.allSatisfy { $0.hasPrefix("\(store.account)-") }, "\(store.replicaID): \(keys)")
        }
        #expect(hub.stop() == 0)
    }

    @Test(arguments: HubStorageKind.allCases)
    func aHundredDevicesSyncingAtOnceAllSucceedAndConverge(_ kind: HubStorageKind) async throws {
        let storage = try HubStorage(kind, name: "hundred")
        let tokens = try (0..<4).map { try HubProcess.createToken(storage: storage, account: "team-\($0)") }
        let hub = try HubProcess(storage: storage)
        // No retries: every one of the 300 concurrent exchanges must succeed the first time.
        let devices = (0..<100).map { index in
            ReplicatedKeyValueStore(replicaID: ReplicaID("device-\(index)")!,
                                    transport: HubHTTPTransport(hub: hubURL(hub.port), token: tokens[index % 4], retry: .never),
                                    account: AccountID("team-\(index % 4)")!)
        }
        for (index, device) in devices.enumerated() { device.set(Int64(index), forKey: "written-by-\(index)") }
        // Every device in its own task, all at once, three exchanges each.
        let failures = await withTaskGroup(of: [String].self) { group in
            for (index, device) in devices.enumerated() {
                group.addTask {
                    var failures: [String] = []
                    for _ in 0..<3 {
                        do { try await device.sync() } catch { failures.append("device-\(index): \(error)") }
                    }
                    return failures
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        // One more round in order, then every device of an account holds its 25 keys.
        for device in devices { try await device.sync() }
        for (index, device) in devices.enumerated() {
            let keys = device.dictionaryRepresentation.keys
            #expect(keys.count == 25 && keys.allSatisfy { Int($0.dropFirst("written-by-".count))! % 4 == index % 4 }, "device-\(index): \(keys.count) keys")
        }
        #expect(hub.stop() == 0)
    }

    @Test(arguments: HubStorageKind.allCases)
    func kill9InTheMiddleOfWritingAndSyncingLosesNoAcknowledgedWrite(_ kind: HubStorageKind) async throws {
        // Seeded kill times; several rounds on the same folder (4, times CONVERGE_PROPERTY_SCALE;
        // CONVERGE_PROPERTY_SEED picks other kill times).
        let seed = PropertyConfiguration.replaySeed ?? 9_009
        let rounds = 4 * PropertyConfiguration.scale
        var generator = Xoshiro256StarStar(seed: seed)
        let storage = try HubStorage(kind, name: "kill9")
        let token = try HubProcess.createToken(storage: storage, account: "alice")
        var acknowledged: [String: Int64] = [:]
        var written: [String: Set<Int64>] = [:]
        var next: Int64 = 0
        var failuresAfterKill = 0
        for round in 0..<rounds {
            let hub = try HubProcess(storage: storage)
            let writer = ReplicatedKeyValueStore(replicaID: ReplicaID("writer-\(round)")!,
                                                 transport: HubHTTPTransport(hub: hubURL(hub.port), token: token), account: "alice")
            try await writer.sync()  // start from what the hub holds, so new writes supersede it
            let killAfterMilliseconds = generator.next(in: 30...250)
            let pid = hub.process.processIdentifier
            // The kill comes a random while after the third acknowledged exchange of the round,
            // so that every round checks some writes however slow a loaded machine is; or after
            // the first, once 20 seconds have gone by (a machine so loaded that an exchange
            // takes seconds: seen in a run beside a two-thread simulator sweep).
            var exchanges = 0, killScheduled = false
            let started = Date()
            let deadline = started.addingTimeInterval(120)
            while Date() < deadline {
                var batch: [String: Int64] = [:]
                for _ in 0..<generator.next(in: 1...4) {
                    let key = "k\(next % 40)"
                    writer.set(next, forKey: key)
                    batch[key] = next
                    written[key, default: []].insert(next)
                    next += 1
                }
                do {
                    try await writer.sync()
                    // The hub answered: it committed the push first.
                    acknowledged.merge(batch) { _, new in new }
                    exchanges += 1
                    if !killScheduled && (exchanges == 3 || Date().timeIntervalSince(started) > 20) {
                        killScheduled = true
                        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(killAfterMilliseconds)) { kill(pid, SIGKILL) }
                    }
                } catch {
                    failuresAfterKill += 1
                    break
                }
            }
            _ = hub.stop(signal: SIGKILL)
            // Restart on the same folder and read everything back with a new device.
            let restarted = try HubProcess(storage: storage)
            let reader = ReplicatedKeyValueStore(replicaID: ReplicaID("reader-\(round)")!,
                                                 transport: HubHTTPTransport(hub: hubURL(restarted.port), token: token), account: "alice")
            try await reader.sync()
            for (key, value) in acknowledged.sorted(by: { $0.key < $1.key }) {
                // The acknowledged value, or a later write of the key that reached the hub
                // before the kill even though its answer never arrived (values only grow).
                let found = reader.longLong(forKey: key)
                #expect(found >= value && written[key]!.contains(found),
                        "\(kind) seed \(seed) round \(round): \(key) was acknowledged as \(value), the restarted hub has \(found)")
            }
            #expect(restarted.stop() == 0)
        }
        #expect(failuresAfterKill == rounds, "every round must have been cut by the kill")
        print("kill -9 trials: seed \(seed), \(rounds) kills, \(next) writes; the acknowledged value of \(acknowledged.count) keys checked after each restart")
        #expect(acknowledged.count > 10, "too few writes were acknowledged to show anything")
    }
}
