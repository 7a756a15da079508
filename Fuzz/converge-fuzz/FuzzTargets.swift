import Converge
import ConvergeSharedFolder
import ConvergeSimulation

/// The decoders of untrusted bytes, each with what must hold of whatever it accepts. A
/// check that fails traps: that is what the fuzzer (or the corpus replay) reports.
enum FuzzTarget: String, CaseIterable {
    /// A sync message from the network: canonical round trip, and a store and a hub take
    /// it without trapping and with their invariants intact.
    case message
    /// A file in a shared folder, read by a replica as another replica's snapshot and delta.
    case folderFile = "folder-file"
    /// A stored record of an entry (the delta encoding a store file keeps per key).
    case delta
    /// A hub's durable account state.
    case hubState = "hub-state"
    /// A scenario file of the simulator.
    case scenario
    /// A trace file of the simulator.
    case trace

    /// Runs the target on one input. The checksummed encodings also get the input with a
    /// valid CRC-32C appended: a mutation almost never keeps the checksum right, so without
    /// this the fuzzer would explore the checksum and nothing behind it.
    ///
    /// - Parameter brokenEncoder: Compares what was decoded with an encoder that appends a
    ///   byte, as a broken (non-canonical) encoder would: the round-trip checks must fail.
    func run(_ bytes: [UInt8], brokenEncoder: Bool = false) {
        let tail: [UInt8] = brokenEncoder ? [0] : []
        switch self {
        case .message: for input in [bytes, CRC32C.sealed(bytes)] { Self.message(input, tail: tail) }
        case .folderFile: for input in [bytes, CRC32C.sealed(bytes)] { Self.folderFile(input) }
        case .delta: Self.delta(bytes, tail: tail)
        case .hubState: for input in [bytes, CRC32C.sealed(bytes)] { Self.hubState(input, tail: tail) }
        case .scenario: Self.scenario(bytes)
        case .trace: Self.trace(bytes)
        }
    }

    static func check(_ condition: Bool, _ what: @autoclosure () -> String) {
        if !condition { fatalError("fuzz check failed: \(what())") }
    }

    static let now: UInt64 = 1_700_000_000_000

    static func message(_ bytes: [UInt8], tail: [UInt8]) {
        guard let message = try? SyncMessage(encoded: bytes) else { return }
        // Every version read is written back in the oldest that can express the message: the
        // same bytes but the version (and so the checksum).
        var current = Array(bytes.dropLast(4))
        current[1] = message.writtenFormatVersion
        check((try? message.encoded()).map { $0 + tail } == CRC32C.sealed(current), "an accepted message re-encodes to other bytes")
        // A message of an older version carries nothing that version did not have: a reader
        // of that version would refuse it.
        if case .gossip(let gossip) = message {
            check(bytes[1] >= 5 || (gossip.relayedSessions.isEmpty && gossip.withdrawnSessions.isEmpty && gossip.basis == nil),
                  "a gossip of format version \(bytes[1]) carries relayed or withdrawn sessions or a basis (version 5)")
            check(bytes[1] >= 4 || (gossip.writer == nil && gossip.recipient == nil),
                  "a gossip of format version \(bytes[1]) names a writer ID or a recipient (version 4)")
        }
        let store = ReplicatedKeyValueStore(replicaID: "fuzzed", clock: ManualClock(startMilliseconds: now))
        try? store.setValue(.string("own"), forKey: "own")
        _ = try? store.receive(message)
        check(store._invariantViolation() == nil, "store: \(store._invariantViolation() ?? "")")
        try? store.setValue(.string("after"), forKey: "after")
        var hub = HubSyncMachine(quota: Quota(maximumKeyCount: 4, maximumTotalValueBytes: 200, maximumValueBytes: 100, maximumKeyBytes: 64))
        var compensations: [HubCompensation] = []
        for _ in 0..<2 { _ = try? hub.receive(message, nowMilliseconds: now, compensations: &compensations) }
        checkInvariants(of: hub)
    }

    static func checkInvariants(of hub: HubSyncMachine) {
        for account in hub.accountIDs {
            check(hub._invariantViolation(of: account) == nil, "hub: \(hub._invariantViolation(of: account) ?? "")")
        }
    }

    static func folderFile(_ bytes: [UInt8]) {
        let files = InMemoryFolder()
        try? files.write(bytes, to: ["default", "peer", "00000000000000000001.snapshot"])
        try? files.write(bytes, to: ["default", "peer", "00000000000000000002.delta"])
        let store = ReplicatedKeyValueStore(replicaID: "reader", clock: ManualClock(startMilliseconds: now))
        try? store.setValue(.integer(1), forKey: "own")
        let sync = SharedFolderSync(files: files)
        for _ in 0..<2 {
            do { try sync.synchronize(store) } catch { check(false, "a peer's file made sync throw: \(error)") }
        }
        check(store._invariantViolation() == nil, "store: \(store._invariantViolation() ?? "")")
    }

    static func delta(_ bytes: [UInt8], tail: [UInt8]) {
        guard let delta = try? ReplicatedMap.Delta(encoded: bytes) else { return }
        check(delta.encoded() + tail == bytes, "an accepted delta re-encodes to other bytes")
        if let map = try? ReplicatedMap(entries: delta.entries, context: delta.context) {
            check(map._invariantViolation() == nil, "map: \(map._invariantViolation() ?? "")")
        }
    }

    static func hubState(_ bytes: [UInt8], tail: [UInt8]) {
        var hub = HubSyncMachine()
        guard (try? hub.restoreState(bytes, of: .default)) != nil else { return }
        checkInvariants(of: hub)
        guard let encoded = hub.encodedState(of: .default) else { return check(false, "a restored account has no state") }
        // Older formats, still read, are written back in the current format.
        check(bytes.count > 1 && bytes[1] < HubSyncMachine.accountStateFormatVersion || encoded + tail == bytes,
              "an accepted hub state re-encodes to other bytes")
    }

    static func scenario(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let scenario = try? Scenario(json: text, fileName: "fuzzed.json") else { return }
        let again = try? Scenario(json: text, fileName: "fuzzed.json")
        check(again.map { $0.name == scenario.name && $0.summary == scenario.summary } == true, "decoding the same scenario twice differs")
        // Whatever the file says, resolving its options either fails clearly or gives
        // options within the table's ranges.
        if let options = try? scenario.resolved(seed: 7) {
            check((try? scenario.resolved(seed: 7)) == options, "resolving a scenario twice differs")
        }
    }

    static func trace(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let trace = try? ParsedTrace(text: text) else { return }
        let again = try? ParsedTrace(text: text)
        check(again?.input.seed == trace.input.seed && again?.input.options == trace.input.options
              && again?.recordedDigest == trace.recordedDigest, "parsing the same trace twice differs")
    }
}
