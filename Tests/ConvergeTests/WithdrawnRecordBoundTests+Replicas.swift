@testable import Converge
import Testing

extension WithdrawnRecordBoundTests {
    /// A peer names the replica IDs too: relaying 64 made-up records each of a hundred
    /// made-up replicas (`z0` to `z99`, after `phone` in canonical order), in gossips that
    /// each decode, grows the machine only to ``MeshSyncMachine/maximumWithdrawn`` records,
    /// its gossip still decodes, and the record of a replica whose sessions it records (the
    /// phone's, which withdrew some of its counters) is not pushed out.
    @Test func recordsOfManyReplicasKeepTheMachineBoundedAndAKnownReplicasRecords() throws {
        var laptop = try laptopKnowingThePhonesWithdrawal()
        let genuine = laptop.withdrawnRecords
        #expect(genuine.count == 1)
        var made: [SessionRecord] = []
        for replica in 0..<100 {
            for first in 1...64 { made.append(try record(ReplicaID("z\(replica)")!, from: UInt64(first), session: UInt64(first))) }
        }
        made.sort(by: SessionRecord.canonicallyPrecedes)
        for start in stride(from: 0, to: made.count, by: 3_200) {
            var gossip = SyncGossip(account: .default, sender: "mallory", delta: ReplicatedMap().asDelta, wantsReply: true)
            gossip.withdrawnSessions = Array(made[start..<min(start + 3_200, made.count)])
            let bytes = try SyncMessage.gossip(gossip).encoded()
            _ = laptop.receive(try SyncMessage(encoded: bytes), as: "laptop")
        }
        let kept = laptop.withdrawnRecords.count
        #expect(kept == MeshSyncMachine.maximumWithdrawn)
        #expect(laptop.withdrawnRecords.filter { $0.writer.base == "phone" } == genuine)
        let own = try SyncMessage.gossip(laptop.gossip(to: "phone", from: ReplicatedMap())).encoded()
        #expect(throws: Never.self, "the laptop keeps \(kept) withdrawn records and relays them all") {
            _ = try SyncMessage(encoded: own)
        }
    }
}
