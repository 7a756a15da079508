@_spi(Testing) import Converge
import Testing

/// Two risks reviewers named in the mesh's adoption of orphans: a record with an interior
/// run of ``WriterSessions/unknownSession`` (counters whose session it does not know), and
/// the cap on withdrawn records kept per writer, at the successor and at its peers.
extension MeshSessionRelayTests {
    /// The laptop's first store (A) wrote k1, then, restarted twice (two more sessions),
    /// k2 and k3; the watch acknowledged them, so A dropped its older runs, and the phone,
    /// which heard only k1 before, got a record of the laptop with an unknown run over
    /// laptop:2. A copy of A taken after k1 (B) wrote b2 and b3 under laptop:2 and laptop:3
    /// and sent them to the tablet; then both copies were lost, and the watch went away.
    /// The laptop's successor (an empty disk, now laptop~n) knows the laptop's sessions
    /// from the phone only: its record and the tablet's first provably disagree at
    /// laptop:3, but the copies parted at laptop:2. Adopting from 3 kept b2 under
    /// laptop:2, the dot of A's k2: b2 never reached the phone or the laptop, k2 never
    /// reached the tablet, and the devices never converged.
    @Test func anAdoptionFromARecordWithAnUnknownRunMissesNoOrphan() throws {
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", clock: clock)
        let watch = ReplicatedKeyValueStore(replicaID: "watch", clock: clock)
        let storageA = InMemoryStorage()
        var a = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storageA, clock: clock)
        try a.setValue("1", forKey: "k1")
        try gossip(a, phone)   // the phone's record: laptop:1 by A's first session
        let b = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(try storageA.load()), clock: clock)
        for key in ["k2", "k3"] {
            a = try ReplicatedKeyValueStore(replicaID: "laptop", storage: storageA, clock: clock)   // a new session
            try a.setValue("1", forKey: key)
            try gossip(a, watch)   // acknowledged: A drops its older runs
        }
        try gossip(a, phone)   // the phone's record: laptop:1 by s1, laptop:2 unknown, laptop:3 by s3
        clock.advance(byMilliseconds: 1_000)
        try b.setValue("1", forKey: "b2")
        try b.setValue("1", forKey: "b3")
        try gossip(b, tablet)   // the tablet's record: laptop:1 by s1, laptop:2 and 3 by B's session
        // Both copies are lost; the laptop starts again from an empty disk.
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        for _ in 0..<4 { try gossip(phone, laptop) }
        #expect(!laptop.writerID.isBase)
        var adopted: [AdoptedWrite] = []
        for _ in 0..<8 {
            for (p, q) in [(tablet, laptop), (laptop, tablet), (phone, laptop), (laptop, phone), (phone, tablet), (tablet, phone)] {
                adopted += try gossip(p, q).adopted
            }
        }
        let expected: Set<String> = ["k1", "k2", "k3", "b2", "b3"]
        for store in [laptop, phone, tablet] {
            #expect(Set(store.values.keys) == expected, "\(store.replicaID)(\(store.writerID)): \(store.values.keys.sorted()), adopted \(adopted)\n\(dump([laptop, phone, tablet]))")
        }
        #expect(phone.replicatedState == laptop.replicatedState && tablet.replicatedState == laptop.replicatedState,
                "\(dump([laptop, phone, tablet]))")
    }

    /// Nine empty disks of the laptop in a row each wrote one write under laptop:1 (sessions
    /// 1 to 9) and handed it to one peer only before the disk was lost: nine orphans. The
    /// laptop's successor adopts those of peers 2 to 9 first, then peer 1's. It kept only 8
    /// withdrawn records of the laptop (the bound per writer ID, then), dropping the first
    /// in canonical order: the one of peer 1's adoption, at once. Peer 1
    /// never got the withdrawal and kept its orphan under laptop:1, every gossip from it
    /// was adopted again, and the laptop held the orphan under a new dot each time.
    @Test func anAdoptionsWithdrawnRecordOutlivesLaterWithdrawals() throws {
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let original = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(), clock: clock, writeSessions: .fixed(100))
        try original.setValue("first", forKey: "k")
        try gossip(original, phone)
        var peers: [ReplicatedKeyValueStore] = []
        for i in 1...9 {
            clock.advance(byMilliseconds: 1_000)
            let disk = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(), clock: clock, writeSessions: .fixed(UInt64(i)))
            try disk.setValue(Value.string("v\(i)"), forKey: "k\(i)")   // laptop:1 again, by session i
            let peer = ReplicatedKeyValueStore(replicaID: ReplicaID("peer\(i)")!, clock: clock)
            try gossip(disk, peer)
            peers.append(peer)
        }
        let laptop = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(), clock: clock, writeSessions: .fixed(1_000))
        for _ in 0..<4 { try gossip(phone, laptop) }
        #expect(!laptop.writerID.isBase)
        var adopted: [AdoptedWrite] = []
        for peer in peers.dropFirst() {
            for _ in 0..<2 { adopted += try gossip(peer, laptop).adopted }
        }
        for _ in 0..<3 {
            adopted += try gossip(peers[0], laptop).adopted
            adopted += try gossip(laptop, peers[0]).adopted
            adopted += try gossip(phone, peers[0]).adopted
            adopted += try gossip(peers[0], phone).adopted
            adopted += try gossip(laptop, phone).adopted
            adopted += try gossip(phone, laptop).adopted
        }
        let v1 = laptop.replicatedState.entries.values.flatMap { $0 }.filter { $0.value == "v1" }
        #expect(v1.count == 1, "the orphan 'v1' is held \(v1.count) times at the laptop: \(v1.map(\.dot)); adopted \(adopted)")
        #expect(adopted.filter { $0.key == "k1" }.count <= 1, "v1 adopted more than once: \(adopted)")
        #expect(phone.replicatedState == laptop.replicatedState && peers[0].replicatedState == laptop.replicatedState,
                "\(dump([laptop, phone, peers[0]]))")
    }

    /// ``anAdoptionsWithdrawnRecordOutlivesLaterWithdrawals()`` with a second holder of
    /// peer 1's orphan (the relay) that never gossips with the laptop, only with the phone
    /// and peer 1: the relay can only learn of peer 1's withdrawal through them. The laptop
    /// kept its nine withdrawn records, but the phone and peer 1 kept at most 8 per writer ID
    /// of another replica and dropped peer 1's (the first in canonical order), so the relay
    /// kept the orphan under laptop:1 and the devices never converged. Peers now keep as
    /// many of a replica's records as it keeps of its own
    /// (``MeshSyncMachine/maximumWithdrawnPerReplica``), in the same order.
    @Test func anOrphanHolderTwoHopsFromTheSuccessorLearnsOfItsWithdrawal() throws {
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let relay = ReplicatedKeyValueStore(replicaID: "relay", clock: clock)
        let original = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(), clock: clock, writeSessions: .fixed(100))
        try original.setValue("first", forKey: "k")
        try gossip(original, phone)
        var peers: [ReplicatedKeyValueStore] = []
        for i in 1...9 {
            clock.advance(byMilliseconds: 1_000)
            let disk = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(), clock: clock, writeSessions: .fixed(UInt64(i)))
            try disk.setValue(Value.string("v\(i)"), forKey: "k\(i)")
            let peer = ReplicatedKeyValueStore(replicaID: ReplicaID("peer\(i)")!, clock: clock)
            try gossip(disk, peer)
            peers.append(peer)
        }
        try gossip(peers[0], relay)   // the relay holds v1 under laptop:1 too
        let laptop = try ReplicatedKeyValueStore(replicaID: "laptop", storage: InMemoryStorage(), clock: clock, writeSessions: .fixed(1_000))
        for _ in 0..<4 { try gossip(phone, laptop) }
        #expect(!laptop.writerID.isBase)
        for peer in peers.dropFirst() {
            for _ in 0..<2 { try gossip(peer, laptop) }
        }
        for _ in 0..<6 {
            for (p, q) in [(peers[0], laptop), (laptop, peers[0]), (laptop, phone), (phone, laptop),
                           (relay, phone), (phone, relay), (relay, peers[0]), (peers[0], relay)] {
                try gossip(p, q)
            }
        }
        let v1 = laptop.replicatedState.entries.values.flatMap { $0 }.filter { $0.value == "v1" }
        #expect(v1.count == 1, "the orphan 'v1' is held \(v1.count) times at the laptop: \(v1.map(\.dot))")
        // Who relays peer 1's withdrawal (its session, 1, from laptop:1) to the relay.
        for (holder, peer) in [(laptop, phone), (phone, relay), (peers[0], relay)] {
            guard case .gossip(let sent) = try SyncMessage(encoded: try holder.gossip(to: peer.replicaID)) else { continue }
            let records = sent.withdrawnSessions.filter { $0.writer == "laptop" }
            #expect(records.contains { $0.first == 1 && $0.runs.session(at: 1) == 1 },
                    "\(holder.replicaID) relays \(records.count) withdrawn records of the laptop, not peer 1's")
        }
        #expect(relay.replicatedState == laptop.replicatedState && phone.replicatedState == laptop.replicatedState
                    && peers[0].replicatedState == laptop.replicatedState,
                "\(dump([laptop, phone, peers[0], relay]))")
    }
}
