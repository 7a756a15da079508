import Converge
import Foundation
import Testing

/// Issue 11, "A store restored from a backup, copied, or recreated under the same replica
/// ID": the reuse of counters is detected by the hub or a peer, which know more of the
/// replica's writes than the store, and the store recovers under a new incarnation.
@Suite("Restored and copied stores start a new incarnation")
struct IncarnationTests {
    let clock = ManualClock()
    let everyKey: [String: Value] = ["b": "1", "base": "1", "fresh": "written after restore", "late1": "1", "late2": "1"]

    /// Gossips from `from` to `to` and back, as two mesh devices do.
    func gossip(_ from: ReplicatedKeyValueStore, _ to: ReplicatedKeyValueStore) throws {
        let receipt = try to.receive(try from.gossip(to: to.replicaID))
        if let answer = receipt.answer { try from.receive(answer.message) }
    }

    /// The reproduction through a hub: A writes base and syncs; a backup of A's storage is
    /// taken; A writes late1 and late2 and both sync; A is restored from the backup and writes
    /// fresh. The restored A used to reuse the counters of late1 and late2, and the hub took
    /// fresh for late1: `A: {b, base, fresh, late2}  B: {b, base, late1, late2}`.
    @Test func aStoreRestoredFromABackupLosesNothingThroughTheHub() throws {
        let hub = InMemoryHub(clock: clock)
        let storage = InMemoryStorage()
        var a = try ReplicatedKeyValueStore(replicaID: "A", hub: hub, storage: storage, clock: clock)
        let b = ReplicatedKeyValueStore(replicaID: "B", hub: hub, clock: clock)
        try b.setValue("1", forKey: "b")
        try a.setValue("1", forKey: "base")
        for store in [a, b, a] { #expect(store.synchronize()) }
        let backup = try #require(try storage.load())
        try a.setValue("1", forKey: "late1")
        try a.setValue("1", forKey: "late2")
        for store in [a, b] { #expect(store.synchronize()) }
        a = try ReplicatedKeyValueStore(replicaID: "A", hub: hub, storage: InMemoryStorage(backup), clock: clock)
        try a.setValue("written after restore", forKey: "fresh")
        for _ in 0..<3 { for store in [a, b] { _ = store.synchronize() } }
        #expect(a.values == everyKey)
        #expect(b.values == everyKey)
        #expect(hub.state().entries.count == everyKey.count)
        #expect(a.writerID == "A~2")
        #expect(a.siblings(forKey: "fresh").map(\.dot) == [Dot(replica: "A~2", counter: 1)])
        // Writes after the recovery go on under the new incarnation, and reach everyone.
        try a.setValue("2", forKey: "after")
        for store in [a, b] { #expect(store.synchronize()) }
        #expect(b.value(forKey: "after") == "2")
    }

    /// The same through the mesh: peers gossip, no hub.
    @Test func aStoreRestoredFromABackupLosesNothingInTheMesh() throws {
        let storage = InMemoryStorage()
        var a = try ReplicatedKeyValueStore(replicaID: "A", storage: storage, clock: clock)
        let b = ReplicatedKeyValueStore(replicaID: "B", clock: clock)
        try b.setValue("1", forKey: "b")
        try a.setValue("1", forKey: "base")
        try gossip(a, b)
        let backup = try #require(try storage.load())
        try a.setValue("1", forKey: "late1")
        try a.setValue("1", forKey: "late2")
        try gossip(a, b)
        a = try ReplicatedKeyValueStore(replicaID: "A", storage: InMemoryStorage(backup), clock: clock)
        try a.setValue("written after restore", forKey: "fresh")
        for _ in 0..<3 { try gossip(a, b) }
        #expect(a.values == everyKey)
        #expect(b.values == everyKey)
        #expect(a.writerID == "A~2")
    }

    /// A store file copied to a second device under the same replica ID: the copy that
    /// falls behind the other is caught by the hub's context and recovers; every write
    /// survives on both.
    @Test func aStoreCopiedToASecondDeviceLosesNothingThroughTheHub() throws {
        let hub = InMemoryHub(clock: clock)
        let storage = InMemoryStorage()
        let first = try ReplicatedKeyValueStore(replicaID: "laptop", hub: hub, storage: storage, clock: clock)
        try first.setValue("1", forKey: "shared")
        #expect(first.synchronize())
        let second = try ReplicatedKeyValueStore(replicaID: "laptop", hub: hub, storage: InMemoryStorage(try storage.load()), clock: clock)
        try first.setValue("1", forKey: "first-1")
        try first.setValue("2", forKey: "first-2")
        try second.setValue("1", forKey: "second-1")
        for _ in 0..<3 { for store in [first, second] { _ = store.synchronize() } }
        let expected: [String: Value] = ["shared": "1", "first-1": "1", "first-2": "2", "second-1": "1"]
        #expect(first.values == expected)
        #expect(second.values == expected)
        #expect(second.writerID == "laptop~2" && first.writerID == "laptop")
        // The copy that recovered is another member to the hub.
        #expect(hub.members() == ["laptop", "laptop~2"])
    }

    @Test func writerIDsOfIncarnationsAreValidAndNoUserIDCanSpellThem() {
        let laptop: ReplicaID = "laptop"
        #expect(laptop.incarnation(1) == laptop && laptop.isBase)
        #expect(laptop.incarnation(3).rawValue == "laptop~3")
        let third = ReplicaID(laptop.rawValue + "~3")
        #expect(third == laptop.incarnation(3) && third?.base == laptop && third?.isBase == false)
        for invalid in ["laptop~", "laptop~1", "laptop~02", "~2", "a~b", "a~2~3", "laptop~123456789012345678901"] {
            #expect(ReplicaID(invalid) == nil, "\(invalid)")
        }
    }
}
