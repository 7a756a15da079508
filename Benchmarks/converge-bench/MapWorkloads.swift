import Converge
import Foundation

/// crdt-benchmarks' workloads on a map (github.com/dmonad/crdt-benchmarks, B1, B2, B3),
/// run by Converge here and by Yrs in Benchmarks/yrs/run.py, with the same definitions
/// (written out in run.py's header): time (CPU), the bytes of every update exchanged, and
/// the bytes of the encoded state. Converge's document is a `ReplicatedMap`; an update is
/// what a sync sends: `delta(for:)` the peer's last reported context, encoded. Replica IDs
/// are as short as Yrs's client IDs (1, 2, ...): "a", "b", and "r0" to "r1539".
enum MapWorkloads {
    static let operations = 6_000
    /// crdt-benchmarks' 20 · ⌊√N⌋ clients for N = 6,000.
    static let clients = 20 * Int(Double(operations).squareRoot())

    struct Outcome: Sendable {
        var milliseconds: Double
        var updateBytes: Int
        var stateBytes: Int
    }

    static func timestamp(_ index: Int) -> HybridTimestamp {
        HybridTimestamp(wallMilliseconds: 1_700_000_000_000 + UInt64(index), logical: 0)
    }

    static func apply(_ update: [UInt8], to map: inout ReplicatedMap) {
        map.apply(try! ReplicatedMap.Delta(encoded: update))
    }

    /// b1: one client sets N keys, each set sent as its own update; the peer applies them
    /// (untimed) and must end equal.
    static func b1() -> Outcome {
        var updateBytes = 0, stateBytes = 0
        let time = Measure.median(setUp: { (map: ReplicatedMap(), updates: [[UInt8]]()) }) { client in
            for index in 0..<operations {
                let peerContext = client.map.context  // what the peer reported: everything so far
                client.map.write(.integer(Int64(index)), forKey: "k\(index)", replica: "a", timestamp: timestamp(index))
                client.updates.append(client.map.delta(for: peerContext).encoded())
            }
        } check: { client in
            var peer = ReplicatedMap()
            for update in client.updates { apply(update, to: &peer) }
            precondition(client.updates.count == operations && peer == client.map && client.map.entries.count == operations,
                         "b1: the peer differs")
            updateBytes = client.updates.reduce(0) { $0 + $1.count }
            stateBytes = client.map.encoded().count
        }
        return Outcome(milliseconds: time.cpuMilliseconds, updateBytes: updateBytes, stateBytes: stateBytes)
    }

    /// b2: two clients set the same N keys concurrently (one update each), then each
    /// applies the other's.
    static func b2() -> Outcome {
        var updateBytes = 0, stateBytes = 0
        let time = Measure.median(setUp: { (ReplicatedMap(), ReplicatedMap(), 0) }) { clients in
            for index in 0..<operations {
                clients.0.write(.integer(Int64(index)), forKey: "k\(index)", replica: "a", timestamp: timestamp(index))
            }
            for index in 0..<operations {
                clients.1.write(.integer(Int64(operations + index)), forKey: "k\(index)", replica: "b", timestamp: timestamp(index))
            }
            // Neither has heard from the other: each sends what an empty context lacks.
            let update1 = clients.0.delta(for: VersionVector()).encoded()
            let update2 = clients.1.delta(for: VersionVector()).encoded()
            apply(update2, to: &clients.0)
            apply(update1, to: &clients.1)
            clients.2 = update1.count + update2.count
        } check: { clients in
            precondition(clients.0 == clients.1 && clients.0.entries.count == operations && clients.0.siblings(forKey: "k0").count == 2,
                         "b2: the clients differ")
            updateBytes = clients.2
            stateBytes = clients.0.encoded().count
        }
        return Outcome(milliseconds: time.cpuMilliseconds, updateBytes: updateBytes, stateBytes: stateBytes)
    }

    /// b3.x: every client sets `key(i)` concurrently, one update each; client 0 applies
    /// them all (untimed), then client 1 does (timed) and must equal client 0.
    static func b3(key: (Int) -> String, distinctKeys: Int) -> Outcome {
        var clientMaps: [ReplicatedMap] = []
        var updates: [[UInt8]] = []
        for index in 0..<clients {
            var map = ReplicatedMap()
            map.write(.integer(Int64(index)), forKey: key(index), replica: ReplicaID("r\(index)")!, timestamp: timestamp(index))
            updates.append(map.delta(for: VersionVector()).encoded())
            clientMaps.append(map)
        }
        var reference = clientMaps[0]
        for update in updates { apply(update, to: &reference) }
        precondition(reference.entries.count == distinctKeys && reference.context.count == clients)
        let time = Measure.median(setUp: { clientMaps[1] }) { client in
            for update in updates { apply(update, to: &client) }
        } check: { client in
            precondition(client == reference, "b3: client 1 differs from client 0")
        }
        return Outcome(milliseconds: time.cpuMilliseconds, updateBytes: updates.reduce(0) { $0 + $1.count },
                       stateBytes: reference.encoded().count)
    }

    static let all: [(name: String, summary: String, run: @Sendable () -> Outcome)] = [
        ("b1", "6,000 sequential sets by one client, an update each", b1),
        ("b2", "two clients set the same 6,000 keys, then sync", b2),
        ("b3.1", "1,540 clients set one key concurrently", { b3(key: { _ in "v" }, distinctKeys: 1) }),
        ("b3.3", "1,540 clients each set a distinct key", { b3(key: { "k\($0)" }, distinctKeys: clients) }),
        ("b3.4", "1,540 clients set 20 shared keys", { b3(key: { "k\($0 % 20)" }, distinctKeys: 20) }),
    ]

    /// The workload `name` on both sides: Converge's figures, Yrs's beside them and the
    /// ratios (Converge / Yrs) when the Yrs side ran, with the goal of being below Yrs on
    /// all three.
    static func result(_ name: String) -> BenchmarkResult {
        let workload = all.first { $0.name == name }!
        let ours = workload.run()
        var figures: [(String, Double)] = [
            ("time_ms", ours.milliseconds), ("update_bytes", Double(ours.updateBytes)), ("state_bytes", Double(ours.stateBytes)),
        ]
        let goal = "faster than Yrs, and smaller in update and state bytes (every ratio < 1)"
        switch YrsPeer.outcome(name) {
        case .success(let yrs):
            let ratios = [ours.milliseconds / yrs.milliseconds, Double(ours.updateBytes) / Double(yrs.updateBytes),
                          Double(ours.stateBytes) / Double(yrs.stateBytes)]
            figures += [
                ("yrs_time_ms", yrs.milliseconds), ("yrs_update_bytes", Double(yrs.updateBytes)), ("yrs_state_bytes", Double(yrs.stateBytes)),
                ("time_ratio", ratios[0]), ("update_ratio", ratios[1]), ("state_ratio", ratios[2]),
            ]
            return BenchmarkResult(name: name, figures: figures, goal: goal, met: ratios.allSatisfy { $0 < 1 },
                                   note: "Yrs through pycrdt \(YrsPeer.version ?? "?")")
        case .failure(let reason):
            return BenchmarkResult(name: name, figures: figures, goal: goal, met: nil, note: "Yrs side unavailable: \(reason.message)")
        }
    }
}
