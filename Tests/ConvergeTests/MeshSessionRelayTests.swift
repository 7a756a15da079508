@_spi(Testing) import Converge
import Testing

/// Issue 11 in the mesh, where no hub sees every write: a device that heard a restored or
/// copied store's original only through a third device, or that took one copy's writes
/// before the copy found out, must not lose the other copy's. Session records travel with
/// the writes, a store withdraws the counters it re-stamps, and gossip names the report it
/// was computed for.
@Suite("Mesh devices relay write sessions and withdrawn counters")
struct MeshSessionRelayTests {
    let clock = ManualClock()

    /// Gossips from `from` to `to` and back, as two mesh devices do.
    @discardableResult
    func gossip(_ from: ReplicatedKeyValueStore, _ to: ReplicatedKeyValueStore) throws -> SyncReceipt {
        let receipt = try to.receive(try from.gossip(to: to.replicaID))
        if let answer = receipt.answer { try from.receive(answer.message) }
        return receipt
    }

    /// Two copies of the laptop's store write as many writes each; the phone first hears
    /// only the first copy and the tablet only the second, so each takes one copy's writes
    /// under the same dots. Then every pair gossips (the copies, under one replica ID, never
    /// with each other). The phone and the tablet refuse each other while their records of
    /// the laptop's sessions disagree; the second copy learns from the phone's record that its
    /// counters were reused, re-stamps its writes and withdraws the old counters, and the
    /// tablet drops the writes it took under them and fetches the first copy's. Without the
    /// session checks (the mesh comparing counters only), the tablet never gets the first
    /// copy's writes.
    @Test(arguments: [false, true])
    func devicesThatEachTookOneCopysWritesLoseNothing(ignoresSessions: Bool) throws {
        let storage = InMemoryStorage()
        let first = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storage, clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", clock: clock)
        try first.setValue("1", forKey: "shared")
        let second = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(try storage.load()), clock: clock)
        for store in [first, second, phone, tablet] { store._meshIgnoresWriterSessions = ignoresSessions }
        try first.setValue("1", forKey: "first-1")
        try first.setValue("2", forKey: "first-2")
        try second.setValue("1", forKey: "second-1")
        try second.setValue("2", forKey: "second-2")
        try gossip(first, phone)
        try gossip(second, tablet)
        let refused = try gossip(phone, tablet)
        for _ in 0..<4 {
            for (a, b) in [(phone, tablet), (second, phone), (tablet, second), (first, tablet), (phone, first)] { try gossip(a, b) }
        }
        let expected: Set<String> = ["shared", "first-1", "first-2", "second-1", "second-2"]
        if ignoresSessions {
            #expect(Set(tablet.values.keys) != expected || Set(phone.values.keys) != expected,
                    "devices that compare counters only should lose one copy's writes")
        } else {
            #expect(refused.ignored == .reusedCounters, "the phone and the tablet hold different writes under the laptop's dots")
            for store in [first, second, phone, tablet] {
                #expect(Set(store.values.keys) == expected, "\(store.writerID): \(store.values.keys.sorted())")
            }
            #expect(second.writerID.base == "laptop" && !second.writerID.isBase && first.writerID == "laptop")
        }
    }

    /// A writer drops the runs of its sessions below what a peer acknowledged, so a device
    /// that heard of it only before then gets a record that starts past where its own ends.
    /// The counters between are of sessions neither record names: joined, the device's
    /// earlier run claimed them, its record then disagreed with every device that knew
    /// their true session, and the two refused each other's gossip for good (the mesh
    /// `device-restore` scenario, seed 175, shrunk: a device restarted twice between writes).
    @Test func aRecordThatSkipsCountersClaimsNothingOfThemAndDevicesKeepSyncing() throws {
        let storage = InMemoryStorage()
        var laptop = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storage, clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", clock: clock)
        try laptop.setValue("1", forKey: "k1")
        try gossip(laptop, phone)   // the phone's record: laptop:1 by the first session
        for key in ["k2", "k3"] {
            laptop = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storage, clock: clock)   // a new session
            try laptop.setValue("1", forKey: key)
            try gossip(laptop, tablet)   // the tablet acknowledges it: the laptop drops older runs
        }
        try gossip(laptop, phone)   // the laptop's runs now start at laptop:3
        try tablet.setValue("1", forKey: "from-tablet")
        try phone.setValue("1", forKey: "from-phone")
        let toPhone = try gossip(tablet, phone), toTablet = try gossip(phone, tablet)
        #expect(toPhone.ignored == nil && toTablet.ignored == nil,
                "refused: \(String(describing: toPhone.ignored)), \(String(describing: toTablet.ignored))")
        let expected: Set<String> = ["k1", "k2", "k3", "from-tablet", "from-phone"]
        for store in [phone, tablet] { #expect(Set(store.values.keys) == expected, "\(store.replicaID): \(store.values.keys.sorted())") }
    }

    /// A device whose disk was replaced by an empty one (same replica ID) gets gossip
    /// computed for what it reported before: the delta leaves out what it held then. It takes
    /// nothing of it (``SyncIgnoredReason/staleReport``) and the next exchange brings
    /// everything. The same gossip without its basis, applied, leaves the device without
    /// the write for good: its context would claim it.
    @Test func aDeviceWhoseDiskWentBackTakesNothingComputedForItsOldReport() throws {
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        var laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        try phone.setValue("1", forKey: "before")
        try gossip(laptop, phone)
        try gossip(phone, laptop)
        #expect(laptop.values["before"] == "1")
        laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        try phone.setValue("2", forKey: "after")
        let message = try SyncMessage(encoded: try phone.gossip(to: "laptop"))
        guard case .gossip(let computed) = message else { Issue.record("not gossip: \(message)"); return }
        #expect(computed.basis?["phone"] == 1)

        var withoutBasis = computed
        withoutBasis.basis = nil
        let unchecked = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        try unchecked.receive(.gossip(withoutBasis))
        #expect(unchecked.values["before"] == nil && unchecked.replicatedState.context["phone"] == 2,
                "without the check the empty store's context claims the write it lacks")

        let receipt = try laptop.receive(message)
        #expect(receipt.ignored == .staleReport)
        #expect(laptop.values.isEmpty)
        try gossip(laptop, phone)
        #expect(laptop.values == ["before": "1", "after": "2"])
    }

    /// Orphans (`converge-sim run Simulations/device-restore-mesh.json --topology mesh --seed
    /// 60016`, shrunk): the laptop removed `k` as laptop:2 and the phone took it; the laptop's
    /// disk was then replaced by an empty one, it wrote `k` again under laptop:1 and the
    /// tablet took that; and its disk was replaced once more before it learnt of the reuse.
    /// No copy of the laptop holds the second write, so none can re-stamp and withdraw it:
    /// the phone and the tablet refused each other's gossip for good, and the tablet never
    /// got the phone's own write either. The laptop's successor (its new incarnation) adopts
    /// the write the tablet holds: it re-stamps it under its own writer ID and withdraws the
    /// orphaned counter, and every device ends with both writes.
    @Test func aWriteNoCopyOfItsWriterHoldsIsAdoptedByTheWritersSuccessor() throws {
        let (phone, tablet) = try orphanHeldByTheTablet()
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)   // an empty disk again
        #expect(try gossip(phone, tablet).ignored == .reusedCounters, "the phone and the tablet hold two writes under laptop:1")
        // Refused as computed for the old disk's report, then proving the reuse, then
        // computed for the old writer ID's report, then taken.
        for _ in 0..<4 { try gossip(phone, laptop) }
        #expect(!laptop.writerID.isBase, "the laptop found its counters reused")
        #expect(laptop.values["phone-key"] == "p")
        // The tablet's gossip was computed for the second disk's report (laptop:1), and may
        // not carry the orphan: it is refused. The answer shows the tablet the other record,
        // so its next gossip is its whole state, and the laptop adopts from that; then the
        // tablet drops the orphan with the withdrawal and takes the copy.
        var receipts: [SyncReceipt] = []
        for _ in 0..<4 { receipts.append(try gossip(tablet, laptop)) }
        #expect(receipts.map(\.ignored) == [.reusedCounters, nil, nil, nil])
        #expect(receipts.flatMap(\.adopted).map(\.old) == [Dot(replica: "laptop", counter: 1)]
                && receipts.flatMap(\.adopted).first?.new.replica == laptop.writerID, "\(receipts.map(\.adopted))")
        for _ in 0..<3 {
            for (a, b) in [(phone, tablet), (tablet, laptop), (laptop, phone), (tablet, phone)] { try gossip(a, b) }
        }
        let siblings = laptop.replicatedState.siblings(forKey: "k")
        #expect(siblings.map(\.value) == [nil, "second"] && siblings.map(\.dot.replica) == ["laptop", laptop.writerID],
                "the removal and the adopted write are both held: \(siblings)")
        for store in [phone, tablet] {
            #expect(store.replicatedState == laptop.replicatedState, "\(store.replicaID) differs from the laptop")
        }
        #expect(tablet.values["phone-key"] == "p")
    }

    /// The laptop removes `k` as laptop:2 and the phone takes it; the laptop's disk is then
    /// replaced by an empty one, it writes `k` = "second" under laptop:1 again and the tablet
    /// takes that, and the phone writes `phone-key`. The laptop's disk is to be replaced once
    /// more: the tablet's laptop:1 is an orphan.
    func orphanHeldByTheTablet() throws -> (phone: ReplicatedKeyValueStore, tablet: ReplicatedKeyValueStore) {
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", clock: clock)
        var laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        try laptop.setValue("first", forKey: "k")
        laptop.removeObject(forKey: "k")
        try gossip(laptop, phone)
        laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)   // an empty disk
        clock.advance(byMilliseconds: 1_000)
        try laptop.setValue("second", forKey: "k")
        try gossip(laptop, tablet)
        try phone.setValue("p", forKey: "phone-key")
        return (phone, tablet)
    }

    /// Gossip a writer sent before it withdrew the counters it carries, delivered after the
    /// withdrawal (`converge-sim run Simulations/device-restore-mesh.json --seed 386`,
    /// shrunk): the laptop's disk was replaced by an empty one, it wrote k3 under laptop:1
    /// (already k6's dot, which the phone holds) and sent it to the tablet twice; it then
    /// learnt of the reuse from the phone, re-stamped k3 and withdrew laptop:1, and the
    /// tablet dropped its k3 for the copy. The late second gossip handed laptop:1 back: the
    /// tablet held k3 twice and its context claimed laptop:1, so k6 never reached it. It is
    /// refused now, as gossip relaying a record that holds withdrawn writes is.
    @Test func gossipSentBeforeItsWritesWereWithdrawnIsRefusedWhenItArrivesAfter() throws {
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", clock: clock)
        try laptop.setValue("six", forKey: "k6")
        try gossip(laptop, phone)
        let emptied = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        try emptied.setValue("three", forKey: "k3")
        let late = try emptied.gossip(to: "tablet")
        try gossip(emptied, tablet)
        #expect(tablet.siblings(forKey: "k3").map(\.dot) == [Dot(replica: "laptop", counter: 1)])
        try gossip(phone, emptied)
        #expect(emptied.writerID != "laptop", "the emptied store did not find its counters reused")
        try gossip(emptied, tablet)   // the withdrawal: the tablet drops laptop:1 and asks again
        #expect(tablet.siblings(forKey: "k3").isEmpty, "the withdrawal was not taken")
        try gossip(emptied, tablet)
        #expect(tablet.siblings(forKey: "k3").map(\.dot) == [Dot(replica: emptied.writerID, counter: 1)])
        let receipt = try tablet.receive(late)
        #expect(receipt.ignored == .reusedCounters)
        #expect(tablet.siblings(forKey: "k3").map(\.dot) == [Dot(replica: emptied.writerID, counter: 1)],
                "the late gossip handed back k3's withdrawn write")
        for _ in 0..<2 {
            for (a, b) in [(phone, tablet), (emptied, phone), (tablet, emptied)] { try gossip(a, b) }
        }
        for store in [phone, tablet, emptied] {
            #expect(store.values == ["k6": "six", "k3": "three"], "\(store.writerID): \(store.replicatedState)")
            #expect(store.siblings(forKey: "k3").count == 1 && store.siblings(forKey: "k6").count == 1, "\(store.writerID): \(store.replicatedState)")
        }
    }

    /// What a device learned of a peer's sessions survives a restart: a reopened device
    /// still refuses a copy whose sessions disagree with the original's it heard before.
    @Test func aReopenedDeviceStillRefusesACopyItCouldTellApart() throws {
        let laptopStorage = InMemoryStorage()
        let phoneStorage = InMemoryStorage()
        let first = try ReplicatedKeyValueStore(replicaID: "laptop", storage: laptopStorage, clock: clock)
        var phone = try ReplicatedKeyValueStore(replicaID: "phone", storage: phoneStorage, clock: clock)
        try first.setValue("1", forKey: "shared")
        let second = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(try laptopStorage.load()), clock: clock)
        try first.setValue("1", forKey: "first-1")
        try second.setValue("1", forKey: "second-1")
        try gossip(first, phone)
        phone = try ReplicatedKeyValueStore(replicaID: "phone", storage: phoneStorage, clock: clock)
        let receipt = try phone.receive(try second.gossip(to: "phone"))
        #expect(receipt.ignored == .reusedCounters)
        #expect(phone.values["second-1"] == nil && phone.values["first-1"] == "1")
    }

    /// A restored store that wrote under more sessions than a relayed record carries (each
    /// store object that opens is a session) withdraws its old counters in one record, which
    /// travels whole: a peer relaying it back must not make it a second, shorter record of the
    /// same withdrawal (which would make every gossip of the store out of order, and withdraw
    /// from another counter).
    @Test func aWithdrawalOfManySessionsTravelsWholeAndComesBackHarmless() throws {
        let storage = InMemoryStorage()
        var a = try ReplicatedKeyValueStore(replicaID: "A", storage: storage, clock: clock)
        let b = ReplicatedKeyValueStore(replicaID: "B", clock: clock)
        try a.setValue("1", forKey: "base")
        try gossip(a, b)
        let backup = try #require(try storage.load())
        for index in 0..<3 {
            a.writeSession = 100 + UInt64(index)
            try a.setValue("1", forKey: "late\(index)")
        }
        try gossip(a, b)
        a = try ReplicatedKeyValueStore(replicaID: "A", storage: InMemoryStorage(backup), clock: clock)
        for index in 0..<6 {
            a.writeSession = 200 + UInt64(index)
            try a.setValue("1", forKey: "fresh\(index)")
        }
        for _ in 0..<4 { try gossip(a, b); try gossip(b, a) }
        let message = try SyncMessage(encoded: try a.gossip(to: "B"))
        guard case .gossip(let sent) = message else { Issue.record("not gossip: \(message)"); return }
        #expect(sent.withdrawnSessions.count == 1 && (sent.withdrawnSessions.first?.runs.runs.count ?? 0) > SessionRecord.maximumRelayedRuns)
        let everyKey = Set(["base", "late0", "late1", "late2"] + (0..<6).map { "fresh\($0)" })
        #expect(Set(a.values.keys) == everyKey)
        #expect(Set(b.values.keys) == everyKey)
    }

    /// A peer that relays records of writer IDs it holds no write of (made up: one gossip
    /// may carry thousands) makes the device keep, store and relay none of them: before,
    /// every record was kept, and every gossip the device sent afterwards relayed them all.
    @Test func recordsOfWritersTheGossipHoldsNothingOfAreNotKept() throws {
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", clock: clock)
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        try laptop.setValue("1", forKey: "k")
        try gossip(laptop, phone)
        guard case .gossip(var hostile) = try SyncMessage(encoded: try phone.gossip(to: "tablet")) else {
            Issue.record("not gossip")
            return
        }
        let madeUp = try (0..<500).map { index in
            try #require(SessionRecord(writer: ReplicaID("ghost-\(1_000 + index)")!,
                                       runs: WriterSessions(runs: [.init(firstCounter: 1, session: 7)])!, through: 3))
        }
        hostile.relayedSessions = (hostile.relayedSessions + madeUp).sorted { $0.writer < $1.writer }
        let receipt = try tablet.receive(.gossip(hostile))
        #expect(receipt.ignored == nil && tablet.values["k"] == "1")
        guard case .gossip(let sent) = try SyncMessage(encoded: try tablet.gossip(to: "laptop")) else {
            Issue.record("not gossip")
            return
        }
        #expect(sent.relayedSessions.map(\.writer) == ["laptop"], "\(sent.relayedSessions.count) records relayed")
    }

    /// The new gossip fields round-trip, and records out of order or empty lists are refused.
    @Test func relayedAndWithdrawnRecordsOnTheWireAreCanonical() throws {
        func record(_ writer: ReplicaID, _ first: UInt64, _ session: UInt64, through: UInt64) throws -> SessionRecord {
            let runs = try #require(WriterSessions(runs: [.init(firstCounter: first, session: session)]))
            return try #require(SessionRecord(writer: writer, runs: runs, through: through))
        }
        var gossip = SyncGossip(account: .default, sender: "phone", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector(["a": 3, "b": 2])),
                                wantsReply: true)
        gossip.relayedSessions = [try record("a", 1, 7, through: 3), try record("b", 2, 8, through: 2)]
        gossip.withdrawnSessions = [try record("a", 2, 9, through: 2), try record("a", 3, 10, through: 5)]
        gossip.basis = VersionVector(["a": 1])
        let bytes = try SyncMessage.gossip(gossip).encoded()
        #expect(try SyncMessage(encoded: bytes) == .gossip(gossip))
        let late = try #require(WriterSessions(runs: [.init(firstCounter: 4, session: 1)]))
        #expect(SessionRecord(writer: "a", runs: late, through: 3) == nil, "runs that start after the record's counter do not reach it")

        var unordered = gossip
        unordered.relayedSessions.reverse()
        #expect(throws: ConvergeError.self) { try SyncMessage(encoded: try SyncMessage.gossip(unordered).encoded()) }
        var repeated = gossip
        repeated.withdrawnSessions = [try record("a", 2, 9, through: 2), try record("a", 2, 9, through: 2)]
        #expect(throws: ConvergeError.self) { try SyncMessage(encoded: try SyncMessage.gossip(repeated).encoded()) }
        // Two copies may withdraw from the same counter, each its own lineage.
        var twoLineages = gossip
        twoLineages.withdrawnSessions = [try record("a", 2, 9, through: 2), try record("a", 2, 10, through: 5)]
        #expect(try SyncMessage(encoded: try SyncMessage.gossip(twoLineages).encoded()) == .gossip(twoLineages))
        var ownRecord = gossip
        ownRecord.relayedSessions = [try record("phone", 1, 7, through: 1)]
        #expect(throws: ConvergeError.self) { try SyncMessage(encoded: try SyncMessage.gossip(ownRecord).encoded()) }
    }
}
