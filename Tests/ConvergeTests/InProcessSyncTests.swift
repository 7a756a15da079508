@testable import Converge
import ConvergeTestSupport
import Foundation
import Testing

@Suite("In-process sync through an InMemoryHub")
struct InProcessSyncTests {
    let clock = ManualClock()

    @Test func aWriteOnOneDeviceReachesTheOtherWithANotification() throws {
        let hub = InMemoryHub(clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub, clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub, clock: clock)
        let received = NotificationRecorder(tablet)
        phone.set(["Surrey"], forKey: "FavouriteCounties")
        #expect(phone.synchronize())
        #expect(tablet.synchronize())
        #expect(tablet.array(forKey: "FavouriteCounties") as? [String] == ["Surrey"])
        #expect(received.items == [NotificationRecorder.Item(reason: ReplicatedKeyValueStore.serverChange, keys: ["FavouriteCounties"])])
        // Nothing new: a second exchange posts nothing.
        #expect(tablet.synchronize())
        #expect(received.items.count == 1)
    }

    @Test func anUnreachableHubFailsTheSyncAndLosesNothing() {
        let hub = InMemoryHub(clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub, clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub, clock: clock)
        hub.isReachable = false
        phone.set("offline edit", forKey: "note")
        #expect(!phone.synchronize())
        let error = #expect(throws: ConvergeError.self) { try hub.exchange([]) }
        #expect(error.map { if case .unreachable = $0 { true } else { false } } == true, "an unreachable hub is not a storage error")
        hub.isReachable = true
        #expect(phone.synchronize() && tablet.synchronize())
        #expect(tablet.string(forKey: "note") == "offline edit")
    }

    @Test func syncThrowsHubUnreachableAndTheNextSyncDeliversEverything() async throws {
        let hub = InMemoryHub(clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", transport: hub, clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", transport: hub, clock: clock)
        hub.isReachable = false
        phone.set("offline edit", forKey: "note")
        await #expect(throws: ConvergeError.unreachable("the in-memory hub (isReachable is false)")) { try await phone.sync() }
        #expect(hub.state().entries.isEmpty)
        hub.isReachable = true
        try await phone.sync()
        try await tablet.sync()
        #expect(tablet.string(forKey: "note") == "offline edit")
    }

    @Test func concurrentWritesConvergeAndAreReportedAsConflicts() throws {
        let hub = InMemoryHub(clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub, clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub, clock: clock)
        let log = EventLog()
        let token = phone.observe(log.append)
        defer { token.cancel() }
        phone.set("from phone", forKey: "title")
        clock.advance(byMilliseconds: 10)
        tablet.set("from tablet", forKey: "title")
        for store in [phone, tablet, phone] { #expect(store.synchronize()) }
        #expect(phone.string(forKey: "title") == "from tablet")  // the later write, by the clock
        #expect(tablet.string(forKey: "title") == "from tablet")
        #expect(phone.replicatedState == tablet.replicatedState)
        #expect(log.conflicts.map(\.key) == ["title"])
        #expect(phone.siblings(forKey: "title").count == 2)
    }

    @Test func theHubCompensatesWritesThatBreakTheQuotaAndTellsTheWriter() throws {
        let quota = Quota(maximumKeyCount: 2, maximumTotalValueBytes: 1_000, maximumValueBytes: 1_000, maximumKeyBytes: 16)
        let hub = InMemoryHub(quota: quota, clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub, clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub, clock: clock)
        // Each device is within the quota on its own; together they are one key over.
        try phone.setValue(1, forKey: "a")
        try tablet.setValue(2, forKey: "b")
        try tablet.setValue(3, forKey: "c")
        let log = EventLog()
        let token = tablet.observe(log.append)
        defer { token.cancel() }
        #expect(phone.synchronize())
        #expect(tablet.synchronize())
        #expect(phone.synchronize())
        // Keys are applied in byte order: "b" fits, "c" is the one over and is reverted.
        #expect(hub.state().usage.keyCount == 2)
        #expect(tablet.object(forKey: "c") == nil)
        #expect(phone.replicatedState == tablet.replicatedState)
        #expect(log.changes.contains(ExternalChange(reason: .quotaViolationChange, keys: ["c"])))
        for store in [phone, tablet] { #expect(quota.admits(store.usage)) }
    }

    @Test func aRetiredDeviceReturnsWithAnInitialSyncAndKeepsItsUnseenWrites() throws {
        let hub = InMemoryHub(retirementIntervalMilliseconds: 1_000, clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub, clock: clock)
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", hub: hub, clock: clock)
        phone.set("old", forKey: "gone")
        #expect(phone.synchronize() && laptop.synchronize())
        // The laptop goes silent and writes offline; the phone removes "gone".
        laptop.set("written offline", forKey: "draft")
        clock.advance(byMilliseconds: 5_000)
        phone.removeObject(forKey: "gone")
        #expect(phone.synchronize())
        hub.retireSilentDevices()
        #expect(hub.retiredMembers() == ["laptop"])
        // With the laptop retired, the tombstone becomes stable and is collected.
        #expect(phone.synchronize() && phone.synchronize())
        #expect(hub.state().entries["gone"] == nil)
        let log = EventLog()
        let token = laptop.observe(log.append)
        defer { token.cancel() }
        #expect(laptop.synchronize())
        #expect(log.changes.first?.reason == .initialSyncChange)
        #expect(laptop.object(forKey: "gone") == nil)          // dropped: the hub saw it removed
        #expect(laptop.string(forKey: "draft") == "written offline")  // kept: the hub never saw it
        #expect(phone.synchronize())
        #expect(phone.string(forKey: "draft") == "written offline")
        #expect(hub.members() == ["laptop", "phone"])
    }

    @Test func switchingAccountsReplacesTheDomainAndNothingLeaks() throws {
        let hub = InMemoryHub(clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub, account: "alice", clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub, account: "bob", clock: clock)
        phone.set("alice's secret", forKey: "secret")
        tablet.set("bob's note", forKey: "note")
        #expect(phone.synchronize() && tablet.synchronize())
        let log = EventLog()
        let token = phone.observe(log.append)
        defer { token.cancel() }
        try phone.switchAccount(to: "bob")
        #expect(phone.account == "bob")
        #expect(log.changes == [ExternalChange(reason: .accountChange, keys: ["secret"])])
        #expect(phone.object(forKey: "secret") == nil)
        #expect(phone.synchronize())
        #expect(phone.string(forKey: "note") == "bob's note")
        #expect(hub.state(of: "bob").entries["secret"] == nil)
        // Switching back restores alice's data from the local copy, and syncs on.
        try phone.switchAccount(to: "alice")
        #expect(phone.string(forKey: "secret") == "alice's secret")
        #expect(phone.object(forKey: "note") == nil)
        #expect(phone.synchronize())
        #expect(hub.state(of: "alice").entries["note"] == nil)
    }

    @Test func reopeningStorageOfAnotherAccountSwitchesInsteadOfLeaking() throws {
        let hub = InMemoryHub(clock: clock)
        let storage = InMemoryStorage()
        let alice = try ReplicatedKeyValueStore(replicaID: "phone", hub: hub, account: "alice", storage: storage, clock: clock)
        alice.set("alice's secret", forKey: "secret")
        let bob = try ReplicatedKeyValueStore(replicaID: "phone", hub: hub, account: "bob", storage: storage, clock: clock)
        #expect(bob.account == "bob")
        #expect(bob.object(forKey: "secret") == nil)
        #expect(bob.synchronize())
        #expect(hub.state(of: "bob").entries.isEmpty)
    }

    @Test func malformedBytesAreRefusedAndChangeNothingAtTheHub() throws {
        let hub = InMemoryHub(clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub, clock: clock)
        phone.set(1, forKey: "k")
        #expect(phone.synchronize())
        let before = hub.state()
        #expect(malformedProblem { try hub.exchange([]) } == .truncated)
        #expect(malformedProblem { try hub.exchange([0xC7, 9, 1]) } == .unsupportedVersion)
        #expect(malformedProblem { try hub.exchange(Array("hello".utf8)) } == .notConverge)
        let reply = try SyncMessage.upToDate(.default).encoded()
        #expect(malformedProblem { try hub.exchange(reply) } == .unexpectedMessage)
        #expect(hub.state() == before)
    }
}

/// Account switches racing syncs on other threads, and one account for every spelling.
@Suite("Accounts under concurrency")
struct AccountRaceTests {
    /// The race: `switchAccount` on one thread, `synchronize` on another, each
    /// hundreds of times. A request is made, and its reply taken, for one account only:
    /// nothing of A may reach B, at the hub or on the device, and the other way round.
    @Test func switchingAccountsWhileSyncingOnAnotherThreadMixesNothing() throws {
        let clock = ManualClock()
        let hub = InMemoryHub(clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub, clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub, clock: clock)
        for (account, prefix) in [(AccountID("A"), "a"), (AccountID("B"), "b")] {
            try phone.switchAccount(to: account)
            try tablet.switchAccount(to: account)
            for index in 0..<40 {
                try phone.setValue(.string(account.rawValue), forKey: "\(prefix)\(index)")
                try tablet.setValue(.string(account.rawValue), forKey: "\(prefix)t\(index)")
            }
            #expect(tablet.synchronize())
        }
        DispatchQueue.concurrentPerform(iterations: 3) { lane in
            for round in 0..<300 {
                switch lane {
                case 0:
                    try? phone.switchAccount(to: round % 2 == 0 ? "A" : "B")
                    usleep(150)
                case 1:
                    // The exchange takes a while, as over a network: a switch lands between
                    // the request and its reply.
                    guard let request = try? phone.hubRequest().bytes else { continue }
                    usleep(100)
                    guard let answer = try? hub.exchange(request) else { continue }
                    usleep(100)
                    _ = try? phone.receive(answer)
                default:
                    try? tablet.switchAccount(to: round % 2 == 0 ? "B" : "A")
                    _ = tablet.synchronize()
                }
            }
        }
        for store in [phone, tablet] {
            for account in [AccountID("A"), AccountID("B")] {
                try store.switchAccount(to: account)
                _ = store.synchronize()
                _ = store.synchronize()
            }
        }
        for account in [AccountID("A"), AccountID("B")] {
            let foreign = hub.state(of: account).liveKeys.filter { !$0.hasPrefix(account.rawValue.lowercased()) }
            #expect(foreign.isEmpty, "the hub's \(account) holds \(foreign.count) keys of the other account: \(foreign.prefix(5))")
            #expect(hub.state(of: account).liveKeys.count == 80)
            for store in [phone, tablet] {
                try store.switchAccount(to: account)
                let values = Set(store.values.values)
                #expect(values == [.string(account.rawValue)], "\(store.replicaID) in \(account) reads \(values)")
                #expect(store.values.count == 80)
            }
        }
    }

    @Test func anAccountSpelledComposedOrDecomposedIsOneAccount() throws {
        // Through the failable initialiser with a String (a literal would be coerced).
        let spellings = ["jos\u{E9}@example.com", "jose\u{301}@example.com"]
        let composed = try #require(AccountID(spellings[0]))
        let decomposed = try #require(AccountID(spellings[1]))
        #expect(Array(composed.rawValue.utf8) == Array(decomposed.rawValue.utf8))
        #expect(composed == decomposed && !(composed < decomposed) && !(decomposed < composed))
        // A message naming the account decomposed is refused: the wire carries one spelling.
        var bytes = try SyncMessage.upToDate(composed).encoded()
        let nfc = Array("jos\u{E9}".utf8), nfd: [UInt8] = Array("jose".utf8) + [0xCC, 0x81]
        let at = try #require(bytes.firstRange(of: nfc))
        bytes.replaceSubrange(at, with: nfd)
        bytes[3] += 1  // the name's length
        bytes = CRC32C.sealed(Array(bytes.dropLast(4)))
        #expect(throws: ConvergeError.self) { try SyncMessage(encoded: bytes) }
    }
}
