@testable import Converge
import Testing

/// How many withdrawn records a mesh machine keeps: per replica, all its writer IDs
/// together, as many of another replica's as that replica keeps of its own (which it
/// withdrew itself, and must outlive later ones); of all replicas together, a bound that
/// keeps its gossip readable.
@Suite("Withdrawn session records: kept per replica, bounded")
struct WithdrawnRecordBoundTests {
    func record(_ writer: ReplicaID, from first: UInt64, session: UInt64) throws -> SessionRecord {
        let runs = try #require(WriterSessions(runs: [.init(firstCounter: first, session: session)]))
        return try #require(SessionRecord(writer: writer, runs: runs, through: first))
    }

    /// Nine records of the device's own first writer ID are all kept (the ninth adoption
    /// must not push out the first); a peer relaying a thousand made-up ones grows the
    /// machine only to the bound. Another replica's records stay at the same bound, all its
    /// writer IDs together, and nine of them are all kept too (a peer relays every one the
    /// replica does).
    @Test func eachReplicasRecordsStayBounded() throws {
        var machine = MeshSyncMachine(device: "laptop")
        for session in 1...9 { machine.withdraw(try record("laptop", from: 1, session: UInt64(session))) }
        #expect(machine.withdrawnRecords.count == 9)
        for session in 10...1_009 { machine.withdraw(try record("laptop", from: UInt64(session), session: UInt64(session))) }
        #expect(machine.withdrawnRecords.count == MeshSyncMachine.maximumWithdrawnPerReplica)
        for session in 1...9 { machine.withdraw(try record("phone", from: 1, session: UInt64(session))) }
        #expect(machine.withdrawnRecords.filter { $0.writer == "phone" }.count == 9)
        for incarnation in 2...21 {
            for session in 1...20 {
                machine.withdraw(try record(ReplicaID("phone").incarnation(UInt64(incarnation)), from: UInt64(session), session: UInt64(session)))
            }
        }
        #expect(machine.withdrawnRecords.filter { $0.writer.base == "phone" }.count == MeshSyncMachine.maximumWithdrawnPerReplica)
        #expect(machine.withdrawnRecords.filter { $0.writer == "laptop" }.count == MeshSyncMachine.maximumWithdrawnPerReplica)
    }
}
