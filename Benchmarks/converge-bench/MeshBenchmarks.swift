import Converge
import Foundation

/// What mesh gossip costs as the machine's records grow.
enum MeshBenchmarks {
    /// A record of `writer` issuing counters `first` through `first` in session `session`.
    static func record(_ writer: ReplicaID, from first: UInt64, session: UInt64) -> SessionRecord {
        SessionRecord(writer: writer, runs: WriterSessions(runs: [.init(firstCounter: first, session: session)])!, through: first)!
    }

    /// `count` withdrawn records of made-up replicas whose names start with `prefix`, 64
    /// each (a replica's bound).
    static func madeUpRecords(prefix: String, count: Int) -> [SessionRecord] {
        (0..<count).map { index in
            let counter = UInt64(index % 64 + 1)
            return record(ReplicaID("\(prefix)\(index / 64)")!, from: counter, session: counter)
        }
    }

    /// A machine already holding ``MeshSyncMachine``'s bound of withdrawn records, which
    /// records the write sessions of `recorded` replicas its peer relayed.
    static func machineAtTheBound(recording recorded: Int) -> MeshSyncMachine {
        var machine = MeshSyncMachine(device: "laptop")
        let names = (0..<recorded).map { ReplicaID("r\($0)")! }
        var relayed = SyncGossip(account: .default, sender: "relay",
                                 delta: ReplicatedMap.Delta(entries: [:], context: VersionVector(Dictionary(uniqueKeysWithValues: names.map { ($0, 1) }))),
                                 wantsReply: true)
        relayed.relayedSessions = names.map { record($0, from: 1, session: 1) }
        relayed.withdrawnSessions = madeUpRecords(prefix: "a", count: 1_024)
        _ = machine.receive(.gossip(relayed), as: "laptop")
        precondition(relayedWithdrawn(by: machine) == 1_024, "the machine is not at its bound")
        return machine
    }

    /// How many withdrawn records the machine's next gossip relays (every one it keeps).
    static func relayedWithdrawn(by machine: MeshSyncMachine) -> Int {
        machine.gossip(to: "phone", from: ReplicatedMap()).withdrawnSessions.count
    }

    /// mesh.withdrawn: a gossip relaying 4,096 new withdrawn records of made-up replicas to
    /// a machine at its bound of withdrawn records (each pushes another out), when the
    /// machine records the sessions of no replica and of 4,000: the cost must follow the
    /// records relayed, not the replicas recorded.
    static func withdrawnAtTheBound() -> BenchmarkResult {
        let incoming = madeUpRecords(prefix: "z", count: 4_096)
        func cost(recorded: Int) -> Double {
            Measure.median(setUp: { machineAtTheBound(recording: recorded) }, { machine in
                var gossip = SyncGossip(account: .default, sender: "mallory", delta: ReplicatedMap().asDelta, wantsReply: true)
                gossip.withdrawnSessions = incoming
                _ = machine.receive(.gossip(gossip), as: "laptop")
            }, check: { machine in
                precondition(relayedWithdrawn(by: machine) == 1_024, "the machine grew past its bound")
            }).cpuMilliseconds
        }
        let none = cost(recorded: 0), many = cost(recorded: 4_000)
        return BenchmarkResult(name: "mesh.withdrawn", figures: [
            ("records", 4_096), ("ms_recording_0_replicas", none), ("ms_recording_4000_replicas", many),
        ], ratio: many / none, atMost: 2)
    }
}
