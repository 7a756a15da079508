@testable import Converge
import Testing

extension WithdrawnRecordBoundTests {
    /// A peer names the writer IDs: relaying 64 made-up records each of a hundred
    /// incarnations of the device (`laptop~2` to `laptop~101`), in two gossips that each
    /// decode, grew the machine to 6,400 records while the bound was per writer ID, and the
    /// device's own gossip, which relays them whole, no longer decoded at a peer with the
    /// default limits (at most ``DecodingLimits/maximumReplicas`` records). One bound for
    /// all the device's writer IDs keeps it at ``MeshSyncMachine/maximumWithdrawnPerReplica``.
    @Test func recordsOfManyWriterIDsOfTheDeviceKeepItsGossipReadable() throws {
        var laptop = MeshSyncMachine(device: "laptop")
        var made: [SessionRecord] = []
        for incarnation in 2...101 {
            for first in 1...64 {
                made.append(try record(ReplicaID("laptop").incarnation(UInt64(incarnation)), from: UInt64(first), session: UInt64(first)))
            }
        }
        made.sort(by: SessionRecord.canonicallyPrecedes)
        for half in [made.prefix(made.count / 2), made.suffix(made.count / 2)] {
            var gossip = SyncGossip(account: .default, sender: "mallory", delta: ReplicatedMap().asDelta, wantsReply: true)
            gossip.withdrawnSessions = Array(half)
            let bytes = try SyncMessage.gossip(gossip).encoded()
            _ = laptop.receive(try SyncMessage(encoded: bytes), as: "laptop")
        }
        let kept = laptop.withdrawnRecords.count
        let own = try SyncMessage.gossip(laptop.gossip(to: "phone", from: ReplicatedMap())).encoded()
        #expect(kept == MeshSyncMachine.maximumWithdrawnPerReplica)
        #expect(throws: Never.self, "the laptop keeps \(kept) withdrawn records and relays them all") {
            _ = try SyncMessage(encoded: own)
        }
    }
}
