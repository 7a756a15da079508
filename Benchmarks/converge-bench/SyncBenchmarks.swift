import Converge
import ConvergeSimulation  // its seeded generator
import Foundation

/// What syncing and metadata cost in bytes.
enum SyncBenchmarks {
    /// Sixteen stores on one hub, synced, each having written `keysEach` keys.
    static func syncedStores(keysEach: Int = 4) -> (InMemoryHub, [ReplicatedKeyValueStore]) {
        let hub = InMemoryHub(clock: ManualClock())
        let stores = (0..<16).map { ReplicatedKeyValueStore(replicaID: ReplicaID("device-\($0)")!, hub: hub, clock: ManualClock()) }
        for (index, store) in stores.enumerated() {
            for k in 0..<keysEach { try! store.setValue(.integer(Int64(index * 100 + k)), forKey: "k\(index)-\(k)") }
        }
        for _ in 0..<2 { for store in stores { precondition(store.synchronize()) } }
        return (hub, stores)
    }

    /// The push of `state` for a device that knows the hub's current context.
    static func push(device: ReplicaID, state: ReplicatedMap, hubContext: VersionVector) -> [UInt8] {
        var machine = DeviceSyncMachine(device: device)
        _ = machine.receive(.reply(SyncReply(account: .default, kind: .delta, delta: ReplicatedMap.Delta(entries: [:], context: hubContext),
                                      stableFrontier: VersionVector(), rejectedKeys: [])))
        return try! SyncMessage.push(machine.push(from: state)).encoded()
    }

    /// sync.entry: bytes on the wire per changed entry, above the key and value
    /// themselves, for a push of 100 changed entries among 16 replicas.
    static func bytesPerChangedEntry() -> BenchmarkResult {
        let (hub, stores) = syncedStores()
        let before = stores[0].replicatedState.context
        var payload = 0
        for k in 0..<100 {
            let key = "changed-\(k)", value = Value.string("value \(k)")
            try! stores[0].setValue(value, forKey: key)
            payload += key.utf8.count + value.encodedSize
        }
        let bytes = push(device: "device-0", state: stores[0].replicatedState, hubContext: hub.state().context.union(before))
        return BenchmarkResult(name: "sync.entry", figures: [
            ("entries", 100), ("push_bytes", Double(bytes.count)), ("payload_bytes", Double(payload)),
            ("overhead_bytes_per_entry", Double(bytes.count - payload) / 100),
        ])
    }

    /// sync.steady: one exchange (a poll and its answer) when nothing changed, 16 replicas;
    /// also the full push and reply the poll replaces.
    static func steadyStateExchange() -> BenchmarkResult {
        let (hub, stores) = syncedStores()
        let state = stores[0].replicatedState
        var machine = DeviceSyncMachine(device: "device-0")
        _ = machine.receive(.reply(SyncReply(account: .default, kind: .delta, delta: ReplicatedMap.Delta(entries: [:], context: hub.state().context),
                                      stableFrontier: VersionVector(), rejectedKeys: [])))
        let fullPush = try! SyncMessage.push(machine.push(from: state)).encoded()
        let fullReply = try! hub.exchange(fullPush)
        // The device takes the reply: its poll names the context and frontier it carried.
        _ = machine.receive(try! SyncMessage(encoded: fullReply))
        let poll = try! machine.request(from: state).encoded()
        let answer = try! hub.exchange(poll)
        precondition(try! SyncMessage(encoded: answer) == .upToDate(.default), "the steady state was not answered up to date")
        let total = poll.count + answer.count
        return BenchmarkResult(name: "sync.steady", figures: [
            ("replicas", 16), ("poll_bytes", Double(poll.count)), ("answer_bytes", Double(answer.count)), ("exchange_bytes", Double(total)),
            ("full_push_bytes", Double(fullPush.count)), ("full_reply_bytes", Double(fullReply.count)),
        ], goal: "a few dozen bytes (<= 48)", met: total <= 48)
    }

    /// metadata.state: encoded state bytes per key above key and value, after a
    /// 16-replica history of 2,000 writes to 1,000 keys.
    static func metadataPerKey() -> BenchmarkResult {
        var generator = Xoshiro256StarStar(seed: 16)
        var replicas = (0..<16).map { _ in ReplicatedMap() }
        for step in 0..<2_000 {
            let r = generator.next(below: 16)
            replicas[r].write(.integer(Int64(step)), forKey: "key-\(generator.next(below: 1_000))", replica: ReplicaID("replica-\(r)")!,
                              timestamp: HybridTimestamp(wallMilliseconds: 1_700_000_000_000 + UInt64(step), logical: 0))
            if step % 50 == 0 {
                let other = generator.next(below: 16)
                replicas[other].apply(replicas[r].delta(for: replicas[other].context))
            }
        }
        var state = ReplicatedMap()
        for replica in replicas { state.join(replica) }
        let bytes = state.encoded().count
        var payload = 0
        for (key, siblings) in state.entries {
            payload += key.utf8.count
            for sibling in siblings { payload += sibling.valueSizeBytes }
        }
        let perKey = Double(bytes - payload) / Double(state.entries.count)
        return BenchmarkResult(name: "metadata.state", figures: [
            ("replicas", 16), ("keys", Double(state.entries.count)), ("state_bytes", Double(bytes)), ("payload_bytes", Double(payload)),
            ("metadata_bytes_per_key", perKey),
        ], goal: "<= 32 bytes per key", met: perKey <= 32)
    }
}
