@testable import Converge
import Testing

/// How many withdrawn records a mesh machine keeps: of its own replica (which it withdrew
/// itself, and must outlive later ones), all writer IDs together; of other replicas, per
/// writer ID.
@Suite("Withdrawn session records: kept per writer ID, bounded")
struct WithdrawnRecordBoundTests {
    func record(_ writer: ReplicaID, from first: UInt64, session: UInt64) throws -> SessionRecord {
        let runs = try #require(WriterSessions(runs: [.init(firstCounter: first, session: session)]))
        return try #require(SessionRecord(writer: writer, runs: runs, through: first))
    }

    /// Nine records of the device's own first writer ID are all kept (the ninth adoption
    /// must not push out the first); a peer relaying a thousand made-up ones grows the
    /// machine only to the bound, and other replicas' records stay at theirs.
    @Test func ownRecordsOutliveOthersAndStayBounded() throws {
        var machine = MeshSyncMachine(device: "laptop")
        for session in 1...9 { machine.withdraw(try record("laptop", from: 1, session: UInt64(session))) }
        #expect(machine.withdrawnRecords.count == 9)
        for session in 10...1_009 { machine.withdraw(try record("laptop", from: UInt64(session), session: UInt64(session))) }
        #expect(machine.withdrawnRecords.count == MeshSyncMachine.maximumOwnWithdrawn)
        for session in 1...20 { machine.withdraw(try record("phone", from: UInt64(session), session: UInt64(session))) }
        #expect(machine.withdrawnRecords.filter { $0.writer == "phone" }.count == MeshSyncMachine.maximumWithdrawnPerWriter)
        #expect(machine.withdrawnRecords.filter { $0.writer == "laptop" }.count == MeshSyncMachine.maximumOwnWithdrawn)
    }
}
