@_spi(Testing) import Converge
import Testing

/// Known limits of the mesh's adoption of orphans and of its withdrawn records, each a
/// reproduction that fails today and runs as a known issue (Swift Testing reports it when it
/// stops failing): a record of the writer's sessions with a run of
/// ``WriterSessions/unknownSession``, in the successor's own record (a write both copies
/// share may sit under it) and in the relayed record (an orphan may sit under it); and a
/// withdrawn record a hostile peer forges.
extension MeshSessionRelayTests {
    /// The laptop's first store (A) wrote k1 and k2 in one session, and the phone heard
    /// k1 only; a copy of A (B) was taken after k2, so laptop:2 is one write both copies
    /// share. A, restarted twice, wrote k3 and k4, the watch acknowledged them, and the
    /// phone's record of the laptop became laptop:1 by s1, laptop:2 and 3 unknown, laptop:4
    /// by s3. The phone deleted k2. B wrote b3 and b4 and sent everything to the tablet.
    /// The laptop's successor knows the laptop from the phone; the tablet's record and its
    /// own first disagree at laptop:4, the copies parted at laptop:3, and laptop:2 is no
    /// orphan: it is the k2 the phone deleted. Adopting from the start of the unknown run
    /// (laptop:2) takes the tablet's k2 for an orphan (the successor does not hold it: it
    /// holds its deletion) and re-stamps it: a sibling concurrent with the deletion, so
    /// under ``MergePolicy/addWins`` the deleted key comes back everywhere.
    @Test func anAdoptionDoesNotBringBackASharedWriteTheSuccessorDeleted() {
        withKnownIssue("known limit: a shared write under an unknown run of the successor's record is adopted as an orphan, and a deletion of it is undone under add-wins") {
            let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
            let tablet = ReplicatedKeyValueStore(replicaID: "tablet", clock: clock)
            let watch = ReplicatedKeyValueStore(replicaID: "watch", clock: clock)
            for store in [phone, tablet] { store.setPolicy(.addWins, forKey: "k2") }
            let storageA = InMemoryStorage()
            var a = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storageA, clock: clock)
            try a.setValue("1", forKey: "k1")
            try gossip(a, phone)   // the phone's record: laptop:1 by A's first session
            try a.setValue("shared", forKey: "k2")   // laptop:2, same session
            let b = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(try storageA.load()), clock: clock)
            for key in ["k3", "k4"] {
                a = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storageA, clock: clock)   // a new session
                try a.setValue("1", forKey: key)
                try gossip(a, watch)   // acknowledged: A drops its older runs
            }
            try gossip(a, phone)
            clock.advance(byMilliseconds: 1_000)
            try phone.removeValue(forKey: "k2")
            try b.setValue("1", forKey: "b3")
            try b.setValue("1", forKey: "b4")
            try gossip(b, tablet)   // the tablet's record: laptop:1 and 2 by s1, laptop:3 and 4 by B's session
            let laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
            laptop.setPolicy(.addWins, forKey: "k2")   // a value beats a concurrent removal
            for _ in 0..<4 { try gossip(phone, laptop) }
            #expect(!laptop.writerID.isBase)
            #expect(laptop.values["k2"] == nil)
            for _ in 0..<8 {
                for (p, q) in [(tablet, laptop), (laptop, tablet), (phone, laptop), (laptop, phone), (phone, tablet), (tablet, phone)] {
                    try gossip(p, q)
                }
            }
            for store in [laptop, phone, tablet] {
                #expect(store.siblings(forKey: "k2").map(\.dot) == [Dot(replica: "phone", counter: 1)],
                        "\(store.replicaID): the deleted k2 came back as a sibling of its deletion\n\(dump([laptop, phone, tablet]))")
            }
            let expected: Set<String> = ["k1", "k3", "k4", "b3", "b4"]
            for store in [laptop, phone, tablet] {
                #expect(Set(store.values.keys) == expected, "\(store.replicaID)(\(store.writerID)): \(store.values.keys.sorted())\n\(dump([laptop, phone, tablet]))")
            }
            #expect(phone.replicatedState == laptop.replicatedState && tablet.replicatedState == laptop.replicatedState,
                    "\(dump([laptop, phone, tablet]))")
        }
    }

    /// ``anAdoptionFromARecordWithAnUnknownRunMissesNoOrphan()`` with the records the
    /// other way round: the successor hears the tablet (B's writes, no unknown run) first,
    /// so the phone's writes are the ones it adopts, and the unknown run is in the record
    /// the phone relays (laptop:1 by s1, laptop:2 unknown, laptop:3 by s3). The copies
    /// parted at laptop:2; the records first disagree at laptop:3.
    @Test func anAdoptionFromARelayedRecordWithAnUnknownRunMissesNoOrphan() {
        withKnownIssue("known limit: an unknown run in the relayed record hides an orphan under it; the write is lost and the devices never converge") {
            let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
            let tablet = ReplicatedKeyValueStore(replicaID: "tablet", clock: clock)
            let watch = ReplicatedKeyValueStore(replicaID: "watch", clock: clock)
            let storageA = InMemoryStorage()
            var a = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storageA, clock: clock)
            try a.setValue("1", forKey: "k1")
            try gossip(a, phone)
            let b = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(try storageA.load()), clock: clock)
            for key in ["k2", "k3"] {
                a = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storageA, clock: clock)
                try a.setValue("1", forKey: key)
                try gossip(a, watch)
            }
            try gossip(a, phone)   // the phone's record: laptop:1 by s1, laptop:2 unknown, laptop:3 by s3
            clock.advance(byMilliseconds: 1_000)
            try b.setValue("1", forKey: "b2")
            try b.setValue("1", forKey: "b3")
            try gossip(b, tablet)
            let laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
            for _ in 0..<4 { try gossip(tablet, laptop) }   // the successor hears B's writes first
            #expect(!laptop.writerID.isBase)
            for _ in 0..<8 {
                for (p, q) in [(phone, laptop), (laptop, phone), (tablet, laptop), (laptop, tablet), (phone, tablet), (tablet, phone)] {
                    try gossip(p, q)
                }
            }
            let expected: Set<String> = ["k1", "k2", "k3", "b2", "b3"]
            for store in [laptop, phone, tablet] {
                #expect(Set(store.values.keys) == expected, "\(store.replicaID)(\(store.writerID)): \(store.values.keys.sorted())\n\(dump([laptop, phone, tablet]))")
            }
            #expect(phone.replicatedState == laptop.replicatedState && tablet.replicatedState == laptop.replicatedState,
                    "\(dump([laptop, phone, tablet]))")
        }
    }

    /// A hostile peer sends the phone a withdrawn record of the laptop's live writer ID: the
    /// honest runs the phone itself relays, through the largest counter. Nothing checks it
    /// (the laptop never withdrew anything): the phone drops the laptop's writes and refuses
    /// the laptop's gossip while its record is below the forged `through` (found by a review;
    /// older than the adoption's latest changes).
    @Test func aForgedWithdrawnRecordOfALiveWriterIsNotTaken() throws {
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let mallory = ReplicatedKeyValueStore(replicaID: "mallory", clock: clock)
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        try laptop.setValue("one", forKey: "k1")
        try laptop.setValue("two", forKey: "k2")
        try gossip(laptop, phone)
        guard case .gossip(let honest) = try SyncMessage(encoded: try phone.gossip(to: mallory.replicaID)),
              let record = honest.relayedSessions.first(where: { $0.writer == "laptop" }) else { Issue.record("no record"); return }
        guard case .gossip(var forged) = try SyncMessage(encoded: try mallory.gossip(to: phone.replicaID)) else { Issue.record("not gossip"); return }
        forged.withdrawnSessions = [SessionRecord(writer: "laptop", runs: record.runs, through: Dot.maximumCounter)!]
        let receipt = try phone.receive(.gossip(forged))
        let afterForgery = phone.values
        try laptop.setValue("three", forKey: "k3")
        for _ in 0..<4 {
            for (p, q) in [(laptop, phone), (phone, laptop), (mallory, phone), (phone, mallory)] { try gossip(p, q) }
        }
        let last = try gossip(laptop, phone)
        withKnownIssue("known limit: a forged withdrawn record of a live writer ID empties a device of its writes and cuts it off the writer") {
            #expect(afterForgery == ["k1": "one", "k2": "two"], "\(String(describing: receipt.ignored)): the phone dropped the laptop's writes on a forged withdrawal: \(afterForgery)")
            #expect(phone.values == ["k1": "one", "k2": "two", "k3": "three"],
                    "laptop's gossip \(String(describing: last.ignored)); laptop \(laptop.values.keys.sorted()), phone \(phone.values.keys.sorted())")
        }
    }
}
