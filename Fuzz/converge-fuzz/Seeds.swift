import Converge
import ConvergeSimulation
import Foundation

/// Valid inputs for each target, made by the code itself: where the fuzzer starts from.
/// `converge-fuzz --write-seeds Fuzz/corpus` writes them (run from the package root).
enum FuzzSeeds {
    static func all() throws -> [(FuzzTarget, [[UInt8]])] {
        let clock = ManualClock(startMilliseconds: FuzzTarget.now)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        try phone.setValue(.string("Devon"), forKey: "county")
        try phone.setValue(.array([.integer(1), .double(2.5), .bool(true)]), forKey: "list")
        try laptop.setValue(.dictionary(["a": .data(Data([0, 1, 2])), "b": .date(Date(timeIntervalSince1970: 1_000))]), forKey: "dict")
        try laptop.setValue(.string("Cornwall"), forKey: "county")
        try laptop.removeValue(forKey: "dict")
        var hub = HubSyncMachine()
        var compensations: [HubCompensation] = []
        var messages: [[UInt8]] = []
        // The phone writes before its second exchange: a push that names the digest of what it
        // holds (format 6, flag 64), which the hub answers relative to its last reply.
        for (turn, store) in [phone, laptop, phone].enumerated() {
            if turn == 2 { try phone.setValue(.string("Dorset"), forKey: "county") }
            let request = try store.hubRequest().bytes
            let answer = try hub.receive(try SyncMessage(encoded: request), nowMilliseconds: FuzzTarget.now, compensations: &compensations)
            let reply = try answer.encoded()
            try store.receive(reply)
            messages += [request, reply]
        }
        messages.append(try phone.gossip(to: "laptop"))
        let snapshot = try required(phone.broadcast(after: nil))
        try phone.setValue(.integer(7), forKey: "n")
        let delta = try required(phone.broadcast(after: snapshot.delta.context))
        let files = [try SyncMessage.gossip(snapshot).encoded(), try SyncMessage.gossip(delta).encoded()]
        let state = phone.replicatedState
        let deltas = [state.asDelta.encoded(), state.delta(for: snapshot.delta.context).encoded()]
        // Pages: a returning device's full state and a large push, each cut to 300 bytes.
        var paging = HubSyncMachine(retirementIntervalMilliseconds: 10)
        paging.maximumReplyBytes = 300
        var pushes = [SyncPush(account: .default, device: "phone", delta: state.asDelta),
                      SyncPush(account: .default, device: "phone", delta: state.asDelta, basis: state.context)]
        for key in ["k1", "k2", "k3", "k4", "k5", "k6"] { try laptop.setValue(.string(String(repeating: key, count: 20)), forKey: key) }
        let large = laptop.replicatedState
        let page = large.delta(for: VersionVector(), maximumBytes: 300)
        pushes.append(SyncPush(account: .default, device: "laptop", delta: page.delta, moreToCome: !page.complete, partialKeys: page.partialKeys))
        messages.append(try SyncMessage.reply(SyncReply(account: .default, kind: .delta, delta: page.delta, stableFrontier: VersionVector(),
                                                        rejectedKeys: [], moreToCome: true, partialKeys: page.delta.entries.keys.sortedByUTF8().suffix(1))).encoded())
        pushes.append(SyncPush(account: .default, device: "laptop", delta: large.asDelta))
        for (offset, push) in pushes.enumerated() {
            _ = try paging.receive(push, nowMilliseconds: FuzzTarget.now + UInt64(offset) * 100)
        }
        let returned = try paging.receive(SyncPush(account: .default, device: "phone", delta: state.asDelta), nowMilliseconds: FuzzTarget.now + 400)
        let fullPage = large.fullStatePage(after: "county", within: large.context, maximumBytes: 120)
        let pageReply = SyncReply(account: .default, kind: .fullState, delta: fullPage.delta, stableFrontier: VersionVector(),
                                  rejectedKeys: [], keys: fullPage.keys)
        messages.append(try SyncMessage.reply(pageReply).encoded())
        messages += [try SyncMessage.push(pushes[1]).encoded(), try SyncMessage.reply(returned).encoded(),
                     try SyncMessage.push(SyncPush(account: .default, device: "phone", delta: state.asDelta, acknowledgesFullState: true,
                                                   acknowledgedThrough: returned.keys.through)).encoded()]
        // Gossip with every field of format version 5: a relayed session record of another
        // writer ID, a withdrawn one, and the report it was computed for (flags 32, 64, 128).
        var relaying = SyncGossip(account: .default, sender: "phone", delta: state.delta(for: snapshot.delta.context), wantsReply: true)
        relaying.basis = snapshot.delta.context
        relaying.writerSessions = try required(WriterSessions(runs: [.init(firstCounter: 1, session: 7)]))
        let laptopRuns = try required(WriterSessions(runs: [.init(firstCounter: 1, session: 11)]))
        let watchRuns = try required(WriterSessions(runs: [.init(firstCounter: 2, session: 21)]))
        relaying.relayedSessions = [try required(SessionRecord(writer: "laptop", runs: laptopRuns, through: 2))]
        relaying.withdrawnSessions = [try required(SessionRecord(writer: "watch", runs: watchRuns, through: 3))]
        messages.append(try SyncMessage.gossip(relaying).encoded())
        let hubStates = [try required(hub.encodedState(of: .default)), try required(paging.encodedState(of: .default))]
        let scenarioFiles = ["Simulations/quota-pressure.json", "Simulations/hub-crash.json", "Simulations/shared-folder.json"]
        let scenarios = scenarioFiles.compactMap { FileManager.default.contents(atPath: $0).map { [UInt8]($0) } }
        let scenario = try Scenario(json: #"{"name": "seed", "devices": 2, "operations": 30}"#, fileName: "seed.json")
        let input = try SimulationInput(scenario: scenario, seed: 1)
        let trace = Array(Trace.text(input: input, result: SimulationRunner.run(input, checkDeterminism: false)).utf8)
        return [(.message, messages), (.folderFile, files), (.delta, deltas), (.hubState, hubStates),
                (.scenario, scenarios), (.trace, [trace])]
    }

    static func write(to folder: String) throws {
        for (target, inputs) in try all() {
            let directory = folder + "/" + target.rawValue
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (index, input) in inputs.enumerated() {
                try Data(input).write(to: URL(fileURLWithPath: directory + "/seed-\(index)"))
            }
        }
    }
}

struct MissingSeed: Error {}

/// The value, or an error if a seed could not be made.
func required<T>(_ value: T?) throws -> T {
    guard let value else { throw MissingSeed() }
    return value
}
