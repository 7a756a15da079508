@_spi(Testing) import Converge
import Foundation
import Testing

/// Review of write sessions (e7a564d..4099f3c): attacks on the hub's session check and the
/// store's tip check, each a case a user or a peer can produce.
@Suite("Write sessions under attack")
struct WriteSessionReviewTests {
    let clock = ManualClock()

    /// One exchange of `store` with the hub machine `hub`, as a transport carries it.
    func exchange(_ store: ReplicatedKeyValueStore, with hub: inout HubSyncMachine) throws {
        let request = try SyncMessage(encoded: try store.hubRequest().bytes)
        var compensations: [HubCompensation] = []
        try store.receive(try hub.receive(request, nowMilliseconds: clock.nowMilliseconds(), compensations: &compensations).encoded())
    }

    /// A store "A" on `storage` that wrote "base" and synced with `hub`, was backed up
    /// (`backup`), then wrote "late1" and "late2" and synced them; and a store "B" that has
    /// not synced.
    func syncedPastABackup(with hub: inout HubSyncMachine) throws
        -> (storage: InMemoryStorage, a: ReplicatedKeyValueStore, b: ReplicatedKeyValueStore, backup: StoredState) {
        let storage = InMemoryStorage()
        let a = try ReplicatedKeyValueStore(replicaID: "A", storage: storage, clock: clock)
        let b = ReplicatedKeyValueStore(replicaID: "B", clock: clock)
        try a.setValue("1", forKey: "base")
        try exchange(a, with: &hub)
        let backup = try #require(try storage.load())
        try a.setValue("1", forKey: "late1")
        try a.setValue("1", forKey: "late2")
        try exchange(a, with: &hub)
        return (storage, a, b, backup)
    }

    /// The store file is put back from a backup underneath a store object that stays open
    /// (another process restores the file, a sync service rolls it back): the object catches
    /// up with the older state and issues the lost counters again under its own session,
    /// the one that issued them the first time, so the hub's runs agree with the reused
    /// counters; and its hub machine still believes the hub holds the counters it issued
    /// before the restore, so it polls (no sessions, equal digest: up to date) or pushes only
    /// the counters past them. The restored writes are taken for the lost ones.
    ///
    /// Two writes after the restore issue exactly the lost counters; three issue one more.
    @Test(arguments: [2, 3])
    func aStoreRestoredUnderAnOpenObjectLosesNothing(freshWrites: Int) throws {
        var hub = HubSyncMachine()
        let (storage, a, b, backup) = try syncedPastABackup(with: &hub)
        // Restored underneath the open object.
        try storage.replaceAll(with: backup)
        try a.refresh()
        for index in 1...freshWrites { try a.setValue("1", forKey: "fresh\(index)") }
        #expect(a.replicatedState.context[a.writerID] >= hub.state(of: .default).context["A"])
        for _ in 0..<3 { for store in [a, b] { try exchange(store, with: &hub) } }
        let everyKey = Set(["base", "late1", "late2"] + (1...freshWrites).map { "fresh\($0)" })
        #expect(Set(a.values.keys) == everyKey)
        #expect(Set(b.values.keys) == everyKey)
    }

    /// A restored store writes in account "one" (reusing counters the hub of "one" holds),
    /// switches to account "two", and syncs there first: "two" shows the reuse, so the store
    /// starts a new incarnation. Its writes in "one", kept aside, must be re-stamped too:
    /// back in "one" the store pushes under the new writer ID, and writes left under the old
    /// ID's reused counters would be taken for the hub's (the writes behind them lost on
    /// both sides: the hub drops its own, which the push's context claims, and ignores the
    /// store's, whose dots it has seen).
    @Test func aRestoreFoundInAnotherAccountLosesNothing() throws {
        var hub = HubSyncMachine()
        let storage = InMemoryStorage()
        var a = try ReplicatedKeyValueStore(replicaID: "A", storage: storage, clock: clock)
        let b = ReplicatedKeyValueStore(replicaID: "B", clock: clock)
        try a.switchAccount(to: "one")
        try b.switchAccount(to: "one")
        try a.setValue("1", forKey: "base")
        try exchange(a, with: &hub)
        try a.switchAccount(to: "two")
        try a.setValue("1", forKey: "t1")
        try exchange(a, with: &hub)
        try a.switchAccount(to: "one")
        let backup = try #require(try storage.load())
        // The original goes on in both accounts and syncs.
        try a.setValue("1", forKey: "late1")
        try a.setValue("1", forKey: "late2")
        try exchange(a, with: &hub)
        try a.switchAccount(to: "two")
        try a.setValue("1", forKey: "t2")
        try exchange(a, with: &hub)
        // The device is restored; offline, it writes in "one", then switches to "two".
        a = try ReplicatedKeyValueStore(replicaID: "A", storage: InMemoryStorage(backup), clock: clock)
        #expect(a.account == "one")
        try a.setValue("1", forKey: "fresh1")
        try a.setValue("1", forKey: "fresh2")
        try a.switchAccount(to: "two")
        for _ in 0..<3 { try exchange(a, with: &hub) }
        #expect(!a.writerID.isBase, "account two shows the reuse")
        try a.switchAccount(to: "one")
        for _ in 0..<3 { for store in [a, b] { try exchange(store, with: &hub) } }
        let everyKey: Set<String> = ["base", "late1", "late2", "fresh1", "fresh2"]
        #expect(Set(a.values.keys) == everyKey)
        #expect(Set(b.values.keys) == everyKey)
        #expect(Set(hub.state(of: "one").entries.keys) == everyKey)
    }

    /// The same reuse as the hub sees it from a store that left the old writer ID's reused
    /// counters in place (one that re-stamped only the account that showed the reuse, as
    /// stores did before): a push under the new incarnation carries writes of the old one
    /// whose dots the hub holds as other writes. The hub believes a device's claims on its
    /// older incarnations only as far as it sent them or the push carries the very writes it
    /// holds: it keeps its own writes, and takes none of the push's under those dots.
    @Test func aHubKeepsItsWritesWhenANewIncarnationCarriesReusedDotsOfAnOldOne() throws {
        var hub = HubSyncMachine()
        let (_, _, b, backup) = try syncedPastABackup(with: &hub)
        let restored = try ReplicatedKeyValueStore(replicaID: "A", storage: InMemoryStorage(backup), clock: clock)
        try restored.setValue("1", forKey: "fresh1")
        try restored.setValue("1", forKey: "fresh2")
        // Its whole state, under a new incarnation that is a new member of the hub.
        let state = restored.replicatedState
        let push = SyncPush(account: .default, device: "A~7", delta: ReplicatedMap.Delta(entries: state.entries, context: state.context))
        var compensations: [HubCompensation] = []
        _ = try hub.receive(try SyncMessage(encoded: try SyncMessage.push(push).encoded()), nowMilliseconds: clock.nowMilliseconds(),
                            compensations: &compensations)
        hub._checkInvariants()
        #expect(Set(hub.state(of: .default).entries.keys) == ["base", "late1", "late2"])
        for _ in 0..<2 { try exchange(b, with: &hub) }
        #expect(Set(b.values.keys) == ["base", "late1", "late2"])
    }

    /// Seventeen short-lived store objects on one file (the `converge` CLI, one process per
    /// `set`) each write once between two syncs: the runs are capped at 16, and with the
    /// smallest request limit the runs a push sends must still fit and the store must still sync.
    @Test func manySessionsBetweenSyncsStillSyncWithTheSmallestRequests() throws {
        var hub = HubSyncMachine()
        let storage = InMemoryStorage()
        let b = ReplicatedKeyValueStore(replicaID: "B", clock: clock)
        var expected: Set<String> = []
        for index in 0..<17 {
            let process = try ReplicatedKeyValueStore(replicaID: "A", storage: storage, clock: clock)
            try process.setValue(.string(String(repeating: "v", count: 8)), forKey: "k\(index)")
            expected.insert("k\(index)")
        }
        let a = try ReplicatedKeyValueStore(replicaID: "A", storage: storage, clock: clock)
        a.maximumHubRequestBytes = 64
        var runsSent: [Int] = []
        for _ in 0..<40 {
            let request = try a.hubRequest().bytes
            if case .push(let push) = try SyncMessage(encoded: request) { runsSent.append(push.writerSessions.runs.count) }
            var compensations: [HubCompensation] = []
            try a.receive(try hub.receive(try SyncMessage(encoded: request), nowMilliseconds: clock.nowMilliseconds(),
                                          compensations: &compensations).encoded())
            try exchange(b, with: &hub)
        }
        #expect(Set(hub.state(of: .default).entries.keys) == expected)
        #expect(Set(b.values.keys) == expected)
        #expect(a.writerID == "A", "no reuse happened")
        // The runs take at most a quarter of the request (here the last run alone). That a
        // push can still overshoot a limit this small by its own fixed fields (header, basis,
        // checksum) is older and open (see the closing note of 2026-11-26).
        #expect(!runsSent.isEmpty && runsSent.allSatisfy { $0 == 1 }, "runs sent: \(runsSent)")
    }

    /// Hostile sessions from a member of the account: runs far beyond the counters the push
    /// claims, and a push under another device's ID whose runs disagree with the hub's. The
    /// first must not poison the victim's record; the second is refused and changes nothing.
    @Test func hostileSessionsNeitherTrapNorHarmAnotherDevice() throws {
        var hub = HubSyncMachine()
        let victim = ReplicatedKeyValueStore(replicaID: "V", clock: clock)
        try victim.setValue("1", forKey: "v1")
        try exchange(victim, with: &hub)
        let before = hub.state(of: .default)
        let tip = try #require(hub.sessionTip(of: "V", in: .default))
        // Another device claims to be V, adds nothing, and names another session for V's counter.
        var forged = SyncPush(account: .default, device: "V", delta: ReplicatedMap.Delta(entries: [:], context: before.context))
        forged.writerSessions = try #require(WriterSessions(runs: [.init(firstCounter: 1, session: tip &+ 1),
                                                                   .init(firstCounter: Dot.maximumCounter, session: 3)]))
        var compensations: [HubCompensation] = []
        let answer = try hub.receive(try SyncMessage(encoded: try SyncMessage.push(forged).encoded()),
                                     nowMilliseconds: clock.nowMilliseconds(), compensations: &compensations)
        guard case .reply(let reply) = answer else { Issue.record("expected a reply, got \(answer)"); return }
        #expect(reply.delta.entries.isEmpty)
        #expect(hub.state(of: .default) == before)
        #expect(hub.sessionTip(of: "V", in: .default) == tip)
        hub._checkInvariants()
        // The victim goes on as before, not restarting under a new incarnation.
        try victim.setValue("2", forKey: "v2")
        for _ in 0..<2 { try exchange(victim, with: &hub) }
        #expect(victim.writerID == "V")
        #expect(Set(hub.state(of: .default).entries.keys) == ["v1", "v2"])
        // Runs that start past what the push holds are recorded as they are and come back in
        // the hub's persisted state; a reload must not refuse or trap.
        var extra = SyncPush(account: .default, device: "W", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector()))
        extra.writerSessions = try #require(WriterSessions(runs: [.init(firstCounter: UInt64.max, session: 1)]))
        _ = try? hub.receive(try SyncMessage(encoded: try SyncMessage.push(extra).encoded()), nowMilliseconds: clock.nowMilliseconds(),
                             compensations: &compensations)
        hub._checkInvariants()
        _ = try hub.reloadedFromStorage(incarnationsFrom: 2)
    }

    /// A hub state file whose sessions contradict the rest (a device's sessions beyond what
    /// the hub holds of it, runs out of order) is refused with an error, never a trap.
    @Test func aHubStateWithBadSessionsIsRefused() throws {
        var hub = HubSyncMachine()
        let victim = ReplicatedKeyValueStore(replicaID: "V", clock: clock)
        try victim.setValue("1", forKey: "v1")
        try exchange(victim, with: &hub)
        let session = try #require(hub.sessionTip(of: "V", in: .default))
        let sealed = try #require(hub.encodedState(of: .default))
        let body = try CRC32C.unsealed(sealed, what: "test")
        func tail(through: UInt64, runs: [(UInt64, UInt64)]) -> [UInt8] {
            var writer = BinaryWriter()
            writer.writeVarint(1)
            writer.writeString("V")
            writer.writeVarint(through)
            writer.writeVarint(UInt64(runs.count))
            for (first, session) in runs {
                writer.writeVarint(first)
                writer.writeFixed64(session)
            }
            return writer.bytes
        }
        let good = tail(through: 1, runs: [(1, session)])
        try #require(Array(body.suffix(good.count)) == good, "the sessions are the state's last field")
        let prefix = Array(body.dropLast(good.count))
        for bad in [tail(through: 99, runs: [(1, session)]), tail(through: 1, runs: [(2, session)]),
                    tail(through: 1, runs: [(2, session), (1, session &+ 1)]), tail(through: 0, runs: [(1, session)])] {
            var restored = HubSyncMachine()
            #expect(throws: ConvergeError.self) { try restored.restoreState(CRC32C.sealed(prefix + bad), of: .default) }
        }
    }
}
