@_spi(Testing) import Converge
import Testing

/// The mesh's adoption of orphans (a write no copy of its writer holds any more, adopted by
/// the writer's new incarnation), where it could go wrong: a holder that holds more of the
/// orphaned session than the one adopted from, a live twin under the same base, a forged
/// record, a delta key with no siblings through the public merge, and two successors.
extension MeshSessionRelayTests {
    /// Each store's siblings and context, for a failure's message.
    func dump(_ stores: [ReplicatedKeyValueStore]) -> String {
        stores.map { s in
            "\(s.replicaID)(\(s.writerID)): " + s.replicatedState.entries.keys.sorted().map { k in
                "\(k)=" + s.replicatedState.siblings(forKey: k).map { "\($0.dot)\($0.value.map { "\($0)" } ?? "nil")" }.joined(separator: ",")
            }.joined(separator: " ") + " ctx=\(s.replicatedState.context)"
        }.joined(separator: "\n")
    }

    /// The orphan session wrote laptop:1 (seen by the tablet) and laptop:2 (seen, with
    /// laptop:1, by the watch). The successor adopts from the tablet, whose record reaches
    /// only laptop:1, so the withdrawal stops at 1 and the watch keeps both. Before, the
    /// successor then adopted laptop:1 again from the watch, and every device held "second"
    /// twice; it now adopts only what no withdrawn record of that session covers.
    @Test func aHolderThatHoldsMoreOfTheOrphanSessionThanTheSender() throws {
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", clock: clock)
        let watch = ReplicatedKeyValueStore(replicaID: "watch", clock: clock)
        var laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        try laptop.setValue("first", forKey: "k")
        try gossip(laptop, phone)
        laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)   // an empty disk
        clock.advance(byMilliseconds: 1_000)
        try laptop.setValue("second", forKey: "k")
        try gossip(laptop, tablet)
        try laptop.setValue("more", forKey: "k2")
        try gossip(laptop, watch)
        try phone.setValue("p", forKey: "phone-key")
        laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)   // and again
        for _ in 0..<4 { try gossip(phone, laptop) }
        #expect(!laptop.writerID.isBase)
        var adopted: [AdoptedWrite] = []
        for _ in 0..<4 { adopted += try gossip(tablet, laptop).adopted }
        for _ in 0..<6 {
            for (a, b) in [(phone, tablet), (tablet, laptop), (laptop, phone), (tablet, phone), (watch, laptop), (laptop, watch), (watch, phone), (tablet, watch)] {
                adopted += try gossip(a, b).adopted
            }
        }
        #expect(adopted.first?.old == Dot(replica: "laptop", counter: 1) && Set(adopted.map(\.old)).count == adopted.count,
                "no write is adopted twice: \(adopted)")
        for store in [phone, tablet, watch] {
            #expect(store.replicatedState == laptop.replicatedState, "\(store.replicaID) differs from the laptop:\n\(dump([laptop, phone, tablet, watch]))")
        }
        let seconds = laptop.replicatedState.entries.values.flatMap { $0 }.filter { $0.value == "second" }
        #expect(seconds.count == 1, "the orphan 'second' is held \(seconds.count) times: \(seconds.map(\.dot))")
        let mores = laptop.replicatedState.entries.values.flatMap { $0 }.filter { $0.value == "more" }
        #expect(mores.count == 1, "'more' is held \(mores.count) times: \(mores.map(\.dot))")
    }

    /// Two copies of the successor (a clone of laptop~n taken before either adopts) both
    /// adopt the tablet's orphan before the tablet hears of the withdrawal: a known limit
    /// (README, "What you must not do", the mesh). Nothing is lost and every device converges, but the
    /// orphan is held twice, under each copy's dot.
    @Test func twoSuccessorClonesAdoptTheSameOrphan() throws {
        let (phone, tablet) = try orphanHeldByTheTablet()
        let storage = InMemoryStorage()
        let laptop = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storage, clock: clock)
        for _ in 0..<4 { try gossip(phone, laptop) }
        #expect(!laptop.writerID.isBase)
        let clone = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(try storage.load()), clock: clock)
        #expect(clone.writerID == laptop.writerID)
        var adopted: [[AdoptedWrite]] = []
        for _ in 0..<4 {
            // The same gossip for "laptop" reaches both copies (one replica ID).
            let bytes = try tablet.gossip(to: "laptop")
            let r = try laptop.receive(bytes)
            adopted.append(r.adopted)
            if !r.adopted.isEmpty {
                let r2 = try clone.receive(bytes)
                adopted.append(r2.adopted)
                if let answer = r2.answer { try tablet.receive(answer.message) }
            }
            if let answer = r.answer { try tablet.receive(answer.message) }
        }
        for _ in 0..<8 {
            for (a, b) in [(phone, tablet), (tablet, laptop), (laptop, phone), (tablet, phone), (clone, phone), (tablet, clone), (phone, clone)] { try gossip(a, b) }
        }
        for store in [phone, tablet, clone] {
            #expect(store.values == laptop.values, "\(store.replicaID) differs from the laptop")
            #expect(store.replicatedState.entries == laptop.replicatedState.entries, "\(store.replicaID)(\(store.writerID)) entries differ from the laptop's")
        }
        #expect(adopted.filter { !$0.isEmpty }.count == 2, "each copy adopts the orphan once: \(adopted)")
        let seconds = phone.replicatedState.entries.values.flatMap { $0 }.filter { $0.value == "second" }
        #expect(seconds.count == 2, "the orphan 'second' is held \(seconds.count) times: \(seconds.map(\.dot))")
    }

    /// A hostile peer that holds the laptop's honest writes relays a forged record of the
    /// laptop's earlier writer ID (the honest session for laptop:1, a made-up one from 2).
    /// Before, the laptop adopted laptop:2, a write it held itself, and every device held it
    /// twice; a record that disputes only writes the device holds is not believed now.
    @Test func aForgedRecordOfAnEarlierWriterID() throws {
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let mallory = ReplicatedKeyValueStore(replicaID: "mallory", clock: clock)
        var laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        try laptop.setValue("one", forKey: "k1")
        try laptop.setValue("two", forKey: "k2")
        try gossip(laptop, phone)
        try gossip(phone, mallory)
        laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)   // an empty disk
        for _ in 0..<4 { try gossip(phone, laptop) }
        #expect(!laptop.writerID.isBase)
        #expect(laptop.values == ["k1": "one", "k2": "two"])
        let message = try SyncMessage(encoded: try mallory.gossip(to: laptop.replicaID))
        guard case .gossip(var forged) = message else { Issue.record("not gossip"); return }
        guard let honest = forged.relayedSessions.first(where: { $0.writer == "laptop" }) else { Issue.record("no record"); return }
        let honestSession = honest.runs.session(at: 1)!
        forged.relayedSessions = [SessionRecord(writer: "laptop",
                                                runs: WriterSessions(runs: [.init(firstCounter: 1, session: honestSession), .init(firstCounter: 2, session: 424242)])!,
                                                through: 2)!]
        forged.basis = nil
        forged.recipient = laptop.writerID
        forged.recipientTip = nil
        let receipt = try laptop.receive(.gossip(forged))
        if let answer = receipt.answer { try mallory.receive(answer.message) }
        for _ in 0..<4 {
            for (a, b) in [(phone, laptop), (laptop, phone), (mallory, phone), (phone, mallory)] { try gossip(a, b) }
        }
        #expect(receipt.adopted.isEmpty && receipt.ignored == .reusedCounters, "the victim adopted honest writes it already held: \(receipt.adopted)")
        let twos = phone.replicatedState.entries.values.flatMap { $0 }.filter { $0.value == "two" }
        #expect(twos.count == 1, "'two' is held \(twos.count) times at the phone: \(twos.map(\.dot))")
    }

    /// A sender whose context holds more of the first writer ID than its relayed record
    /// reaches (writes read from a shared folder, or a forged gossip): the withdrawal would
    /// reach only as far as the record, and the sender would keep the rest under their dots
    /// beside the copies. Nothing is adopted; the gossip is refused as before.
    @Test func nothingIsAdoptedFromASenderHoldingMoreThanItsRecordShows() throws {
        let (phone, tablet) = try orphanHeldByTheTablet()
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)   // an empty disk again
        for _ in 0..<4 { try gossip(phone, laptop) }
        #expect(!laptop.writerID.isBase)
        // The tablet's gossip, computed for nothing, with one more write of the laptop's
        // first writer ID than the record it relays shows.
        let bytes = try tablet.gossip(to: "laptop")
        guard case .gossip(var gossip) = try SyncMessage(encoded: bytes), gossip.relayedSessions.contains(where: { $0.writer == "laptop" }) else {
            Issue.record("no record of the laptop relayed")
            return
        }
        let extra = try #require(laptop.replicatedState.siblings(forKey: "phone-key").first)
        gossip.basis = nil
        gossip.recipient = laptop.writerID
        gossip.delta.entries["beyond"] = [Sibling(dot: Dot(replica: "laptop", counter: 2), timestamp: extra.timestamp, value: "beyond")]
        gossip.delta.context.raise("laptop", to: 2)
        let receipt = try laptop.receive(.gossip(gossip))
        #expect(receipt.adopted.isEmpty && receipt.ignored == .reusedCounters, "\(receipt.adopted), \(String(describing: receipt.ignored))")
    }

    /// A delta key with no siblings is refused by the public merge: only the rest of a
    /// gossip a device adopts from may have one. Taken, it dropped the key without a
    /// tombstone, and the store and its peers diverged for good.
    @Test func publicMergeOfAKeyWithNoSiblings() throws {
        let a = ReplicatedKeyValueStore(replicaID: "a", clock: clock)
        let b = ReplicatedKeyValueStore(replicaID: "b", clock: clock)
        try a.setValue("v", forKey: "k")
        try gossip(a, b)
        #expect(b.values == ["k": "v"])
        var threw = false
        do {
            try b.merge(ReplicatedMap.Delta(entries: ["k": []], context: b.replicatedState.context))
        } catch {
            threw = true
        }
        for _ in 0..<3 { try gossip(a, b); try gossip(b, a) }
        #expect(threw && a.values == b.values, "a: \(a.values) b: \(b.values)")
    }

    /// The original laptop (still "laptop") hears two disagreeing records of its clone's
    /// successor laptop~n, whose own store was copied again: both copies of laptop~n are
    /// alive. The original is not laptop~n's successor, but the same base: before, it adopted
    /// a live copy's write, which that copy then re-stamped too, and every device held it
    /// twice. Only a replica's first writer ID's writes are adopted, by a later one.
    @Test func aLiveTwinIsNotAnOrphan() throws {
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", clock: clock)
        let storageA = InMemoryStorage()
        let a = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storageA, clock: clock)
        try a.setValue("a1", forKey: "a1")
        try gossip(a, phone)
        let storageB = InMemoryStorage(try storageA.load())
        let b = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storageB, clock: clock)
        try a.setValue("a2", forKey: "a2")
        try b.setValue("b1", forKey: "b1")
        try gossip(a, phone)
        try gossip(b, tablet)
        for _ in 0..<4 { try gossip(phone, b) }
        for _ in 0..<3 { try gossip(b, tablet); try gossip(tablet, phone) }
        let b2 = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(try storageB.load()), clock: clock)
        #expect(b2.writerID == b.writerID && !b.writerID.isBase)
        try b.setValue("x", forKey: "x")
        try b2.setValue("y", forKey: "y")
        try gossip(b, phone)
        try gossip(b2, tablet)
        var adopted: [String] = []
        for _ in 0..<3 {
            for (p, q) in [(phone, a), (tablet, a)] {
                let r = try gossip(p, q)
                if !r.adopted.isEmpty { adopted.append("\(q.writerID) adopted from \(p.replicaID): \(r.adopted)") }
            }
        }
        for _ in 0..<8 {
            for (p, q) in [(phone, tablet), (tablet, phone), (a, phone), (phone, a), (tablet, a), (a, tablet), (b, phone), (phone, b), (b2, tablet), (tablet, b2), (phone, b2), (b, tablet)] {
                let r = try gossip(p, q)
                if !r.adopted.isEmpty { adopted.append("\(q.writerID) adopted from \(p.replicaID): \(r.adopted)") }
            }
        }
        for store in [b, b2, phone, tablet] {
            #expect(store.replicatedState.entries == a.replicatedState.entries, "\(store.replicaID)(\(store.writerID)) entries differ from a's")
        }
        #expect(adopted.isEmpty, "\(adopted)")
        let ys = phone.replicatedState.entries.values.flatMap { $0 }.filter { $0.value == "y" }
        #expect(ys.count == 1, "'y' is held \(ys.count) times: \(ys.map(\.dot))")
        #expect(Set(phone.values.keys) == ["a1", "a2", "b1", "x", "y"], "\(phone.values.keys.sorted())")
    }
}
