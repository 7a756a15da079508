import Converge
import Synchronization
import Testing

/// A device's sync progress (what the hub reported) is durable: a store reopened on its
/// storage resumes from it instead of pushing its whole state again.
@Suite("Sync progress survives a restart")
struct SyncProgressTests {
    /// Passes exchanges to an in-process hub and keeps every request it carried.
    final class RecordingTransport: SyncTransport {
        let hub: InMemoryHub
        let requests = Mutex<[SyncMessage]>([])
        init(hub: InMemoryHub) { self.hub = hub }

        func exchange(_ request: [UInt8]) async throws -> [UInt8] {
            let message = try SyncMessage(encoded: request)
            requests.withLock { $0.append(message) }
            return try hub.exchange(request)
        }

        /// The keys each push carried, or `nil` for a poll.
        var carried: [[String]?] {
            requests.withLock { requests in
                requests.map { message in
                    if case .push(let push) = message { return push.delta.entries.keys.sorted() }
                    return nil
                }
            }
        }
    }

    @Test func aReopenedStorePollsInsteadOfPushingEverythingAgain() async throws {
        let hub = InMemoryHub()
        let storage = InMemoryStorage()
        let transport = RecordingTransport(hub: hub)
        let phone = try ReplicatedKeyValueStore(replicaID: "phone", transport: transport, storage: storage)
        for index in 0..<50 { try phone.setValue(.integer(Int64(index)), forKey: "key\(index)") }
        try await phone.sync()
        #expect(transport.carried.last??.count == 50)

        // The app restarts: a new store object on the same storage.
        let reopened = try ReplicatedKeyValueStore(replicaID: "phone", transport: transport, storage: storage)
        try await reopened.sync()
        #expect(transport.carried.last! == nil, "a restarted device with nothing new polls")
        try reopened.setValue(.string("new"), forKey: "late")
        let again = try ReplicatedKeyValueStore(replicaID: "phone", transport: transport, storage: storage)
        try await again.sync()
        #expect(transport.carried.last! == ["late"], "it pushes only what the hub lacks")
        #expect(hub.state().entries.count == 51)
    }

    @Test func progressOfAnotherAccountOrAnotherIncarnationIsNotResumed() async throws {
        let hub = InMemoryHub()
        let storage = InMemoryStorage()
        let transport = RecordingTransport(hub: hub)
        let phone = try ReplicatedKeyValueStore(replicaID: "phone", transport: transport, storage: storage)
        try phone.setValue(.string("a"), forKey: "k")
        try await phone.sync()
        // Reopened for another account: the storage is switched and the progress of the
        // old account's hub does not count.
        let other = try ReplicatedKeyValueStore(replicaID: "phone", transport: transport, account: "work", storage: storage)
        try other.setValue(.string("b"), forKey: "w")
        try await other.sync()
        guard case .push(let push)? = transport.requests.withLock({ $0.last }) else {
            Issue.record("the first request of another account is a push")
            return
        }
        #expect(push.account == "work" && push.delta.entries.keys.sorted() == ["w"])
        #expect(hub.state(of: "work").entries.keys.sorted() == ["w"])
    }

    @Test func aProgressRecordOfAnotherDeviceOrAccountOrNotWellFormedIsIgnored() async throws {
        func text(_ string: String) -> [UInt8] { [UInt8(string.utf8.count)] + Array(string.utf8) }
        // Each record claims the hub holds phone:5, which would suppress phone's writes if
        // it were trusted.
        let claim: [UInt8] = [1] + text("phone") + [5]
        let records: [[UInt8]] = [
            [1] + text("tablet") + text(AccountID.default.rawValue) + claim + [0, 0],   // another device's
            [1] + text("phone") + text("work") + claim + [0, 0],                        // another account's
            [3] + text("phone") + text(AccountID.default.rawValue) + claim + [0, 0, 0], // a later format
            [1] + text("phone") + text(AccountID.default.rawValue) + claim + [0],       // truncated
            [1] + text("phone") + text(AccountID.default.rawValue) + claim + [0, 7],    // a flag out of range
            [], [1, 200],
        ]
        for record in records {
            let hub = InMemoryHub()
            let phone = try ReplicatedKeyValueStore(replicaID: "phone", transport: RecordingTransport(hub: hub),
                                                    storage: InMemoryStorage(StoredState(metadata: ["hub-progress": record])))
            try phone.setValue(.string("a"), forKey: "k")
            try await phone.sync()
            #expect(hub.state().entries.keys.sorted() == ["k"], "record \(record)")
        }
        // The same claim in a well-formed record of this device is resumed: the check above
        // would catch a store that trusted the others.
        let hub = InMemoryHub()
        let trusting = try ReplicatedKeyValueStore(
            replicaID: "phone", transport: RecordingTransport(hub: hub),
            storage: InMemoryStorage(StoredState(metadata: ["hub-progress": [1] + text("phone") + text(AccountID.default.rawValue) + claim + [0, 0]])))
        try trusting.setValue(.string("a"), forKey: "k")
        try await trusting.sync()
        #expect(hub.state().entries.isEmpty)
    }

    /// A hub machine behind a transport, whose state a test can copy and put back (a
    /// backup restored) or replace (another hub under the same account).
    final class MachineTransport: SyncTransport {
        let hub = Mutex(HubSyncMachine(hubID: "hub"))
        let kinds = Mutex<[String]>([])

        func exchange(_ request: [UInt8]) async throws -> [UInt8] {
            let message = try SyncMessage(encoded: request)
            kinds.withLock { kinds in
                switch message {
                case .push(let push): kinds.append("push \(push.delta.entries.keys.sorted())")
                default: kinds.append("poll")
                }
            }
            var compensations: [HubCompensation] = []
            return try hub.withLock { hub in try hub.receive(message, nowMilliseconds: SystemClock().nowMilliseconds(),
                                                             compensations: &compensations) }.encoded()
        }
    }

    @Test(arguments: [false, true])
    func aHubRestoredFromAnOlderCopyGetsBackTheWritesItLost(writesAfterTheRestore: Bool) async throws {
        let transport = MachineTransport()
        let storage = InMemoryStorage()
        let phone = try ReplicatedKeyValueStore(replicaID: "phone", transport: transport, storage: storage)
        try phone.setValue(.string("v0"), forKey: "k0")
        try await phone.sync()
        let backup = transport.hub.withLock { $0 }
        try phone.setValue(.string("v1"), forKey: "k1")
        try await phone.sync()
        // The hub is restored from the backup (it lost k1), and the phone restarts.
        transport.hub.withLock { $0 = backup }
        let restarted = try ReplicatedKeyValueStore(replicaID: "phone", transport: transport, storage: storage)
        if writesAfterTheRestore { try restarted.setValue(.string("v2"), forKey: "k2") }
        for _ in 0..<3 { try await restarted.sync() }
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", transport: transport)
        try await tablet.sync()
        #expect(tablet.string(forKey: "k1") == "v1", "the write the restored hub lost never came back: \(transport.kinds.withLock { $0 })")
        #expect(tablet.string(forKey: "k0") == "v0")
        if writesAfterTheRestore { #expect(tablet.string(forKey: "k2") == "v2") }
    }

    @Test func anotherHubUnderTheSameAccountGetsEverything() async throws {
        let transport = MachineTransport()
        let storage = InMemoryStorage()
        let phone = try ReplicatedKeyValueStore(replicaID: "phone", transport: transport, storage: storage)
        try phone.setValue(.string("old"), forKey: "old")
        try await phone.sync()
        transport.hub.withLock { $0 = HubSyncMachine(hubID: "hub") }   // a new, empty hub
        let reopened = try ReplicatedKeyValueStore(replicaID: "phone", transport: transport, storage: storage)
        try reopened.setValue(.string("new"), forKey: "new")
        try await reopened.sync()
        try await reopened.sync()
        #expect(transport.hub.withLock { $0.state(of: .default).entries.keys.sorted() } == ["new", "old"])
    }
}
