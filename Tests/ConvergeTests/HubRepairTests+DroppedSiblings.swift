@_spi(Testing) @testable import Converge
import Testing

extension HubRepairTests {
    /// A device that holds a write the hub saw replaced, beside what replaced it, with a
    /// context covering both (it took the replacing write from a page computed for less
    /// than it held: the simulator's `quota-pressure.json` in 300-byte messages, seed 55,
    /// which `SimulationRegressionTests` replays), is told when it pushes the key: the
    /// hub's reply carries the key as the hub holds it, under the hub's whole context, and
    /// the device drops the replaced write. No delta would carry the key otherwise, since
    /// the device's context covers all of it. Without the repair (``HubSyncMachine/_skipsRepair``)
    /// the reply leaves the key out, and the device keeps the replaced write for good.
    @Test(arguments: [false, true])
    func aPushHoldingAWriteTheHubSawReplacedIsAnsweredWithWhatReplacedIt(skipsRepair: Bool) throws {
        var fixture = DroppedSiblingFixture()
        fixture.hub._skipsRepair = skipsRepair
        let (replaced, replacing) = try fixture.replaceAWriteAndSendD1Both()
        let mine = Sibling(dot: Dot(replica: "d1", counter: 1), timestamp: DroppedSiblingFixture.stamp(3), value: .string("mine"))
        var device = try ReplicatedMap(entries: ["k": [replacing, replaced], "j": [mine]], context: VersionVector(["d0": 1, "d1": 1, "d2": 4]))
        let reply = try fixture.push("d1", device.entries, ["d0": 1, "d1": 1, "d2": 4])
        #expect(fixture.hub.state(of: .default).siblings(forKey: "k") == [replacing], "the hub dropped the replaced write again")
        _ = device.apply(reply.delta)
        if skipsRepair {
            #expect(reply.delta.entries["k"] == nil, "without the repair the device is not told (the test shows the fix matters)")
            #expect(device.siblings(forKey: "k").count == 2)
        } else {
            #expect(reply.delta.entries["k"] == [replacing])
            #expect(device.siblings(forKey: "k") == [replacing], "the device dropped the replaced write")
            #expect(device.siblings(forKey: "j") == [mine])
        }
    }

    /// The answer goes first when the rest of the reply leaves no room for it: the rest
    /// comes in the next pages. `quota-pressure.json` in 300-byte messages, seed 124, shrunk
    /// (which `SimulationRegressionTests` replays): the hub's reply to a device's repair
    /// carried three keys the device lacked and had no room left for the answer, and the
    /// device never pushed the key again. Here the device lacks one key of another device's
    /// with a 60-byte value (the answer fits beside it in a complete reply), one with a
    /// 200-byte value (which fits in a reply alone: the answer goes alone in a first page,
    /// under the context the push claimed), or ten with 60-byte values (a page, which
    /// carries the answer too, its context covering all the hub holds of the key). The
    /// second and third fail without the change. An answer of 150 bytes, more than half a
    /// 300-byte reply's room, goes alone (a review found it left out).
    @Test(arguments: [(1, 60, 9), (1, 200, 9), (10, 60, 9), (10, 60, 150), (1, 250, 150)])
    func theAnswerToAPushHoldingAReplacedWriteGoesFirstInAReplyWithoutRoomForAll(otherKeys: Int, valueBytes: Int, answerBytes: Int) throws {
        var fixture = DroppedSiblingFixture()
        let (replaced, replacing) = try fixture.replaceAWriteAndSendD1Both(replacingValue: String(repeating: "r", count: answerBytes))
        let others = (0..<otherKeys).map { index in
            ("other\(index)", [Sibling(dot: Dot(replica: "d3", counter: UInt64(index + 1)), timestamp: DroppedSiblingFixture.stamp(4),
                                       value: .string(String(repeating: "x", count: valueBytes)))])
        }
        _ = try fixture.push("d3", Dictionary(uniqueKeysWithValues: others), ["d3": UInt64(otherKeys)])
        fixture.hub.maximumReplyBytes = 300
        var device = try ReplicatedMap(entries: ["k": [replacing, replaced]], context: VersionVector(["d0": 1, "d2": 4]))
        var reply = try fixture.push("d1", device.entries, ["d0": 1, "d2": 4])
        #expect(reply.delta.entries["k"] == [replacing], "the answer is in the first reply")
        #expect(reply.moreToCome == (otherKeys > 1 || valueBytes > 60 || answerBytes > 9))
        _ = device.apply(reply.delta, partialKeys: Set(reply.partialKeys))
        #expect(device.siblings(forKey: "k") == [replacing], "the device dropped the replaced write")
        var pages = 1
        while reply.moreToCome && pages < 20 {
            reply = try fixture.push("d1", [:], device.context.entries.reduce(into: [:]) { $0[$1.replica] = $1.counter },
                                     basis: reply.delta.context)
            _ = device.apply(reply.delta, partialKeys: Set(reply.partialKeys))
            pages += 1
        }
        #expect(!reply.moreToCome)
        #expect(device == fixture.hub.state(of: .default), "the device ends with the hub's state, after \(pages) replies")
    }

    /// A device that lacks nothing gets, in a complete reply, the answers that fit: the
    /// reply is not cut into pages for them (a page cut below the size of the context alone
    /// would carry none, and ask for a push).
    @Test func answersThatDoNotAllFitGoInACompleteReplyAsFarAsTheyFit() throws {
        var fixture = DroppedSiblingFixture()
        let stamp = DroppedSiblingFixture.stamp
        let large = { (replica: ReplicaID, counter: UInt64) in
            Sibling(dot: Dot(replica: replica, counter: counter), timestamp: stamp(counter), value: .string(String(repeating: "x", count: 100)))
        }
        let (k1Replaced, k2Replaced) = (large("d2", 1), large("d2", 2))
        let (k1Replacing, k2Replacing) = (large("d0", 1), large("d0", 2))
        _ = try fixture.push("d2", ["k1": [k1Replaced], "k2": [k2Replaced]], ["d2": 2])
        _ = try fixture.push("d0", [:], [:])
        _ = try fixture.push("d0", ["k1": [k1Replacing], "k2": [k2Replacing]], ["d0": 2, "d2": 2])
        _ = try fixture.push("d1", [:], [:])
        fixture.hub.maximumReplyBytes = 300
        let reply = try fixture.push("d1", ["k1": [k1Replacing, k1Replaced], "k2": [k2Replacing, k2Replaced]], ["d0": 2, "d2": 2])
        #expect(!reply.moreToCome)
        #expect(reply.delta.entries == ["k1": [k1Replacing]])
    }
}

extension HubRepairTests {
    /// A device holding a value of a key the hub holds nothing of, every sibling of which the
    /// hub has seen (it saw the value removed and collected the removal since), is sent a
    /// full state when it pushes the key, and drops the value: a delta cannot carry a key
    /// with no siblings. `quota-pressure.json` in 300-byte messages, seed 149 (a device held a
    /// value beside two removals the hub had collected, and never converged), which
    /// `SimulationRegressionTests` runs. Without the repair the device keeps the value.
    @Test(arguments: [false, true])
    func aPushHoldingAValueOfAKeyTheHubCollectedIsAnsweredWithAFullState(skipsRepair: Bool) throws {
        var fixture = DroppedSiblingFixture()
        fixture.hub._skipsRepair = skipsRepair
        let value = Sibling(dot: Dot(replica: "d1", counter: 1), timestamp: DroppedSiblingFixture.stamp(1), value: .string("removed later"))
        let kept = Sibling(dot: Dot(replica: "d1", counter: 2), timestamp: DroppedSiblingFixture.stamp(2), value: .string("kept"))
        let removal = Sibling(dot: Dot(replica: "d1", counter: 3), timestamp: DroppedSiblingFixture.stamp(3), value: nil)
        try fixture.writeRemoveAndCollect(value, beside: kept, removal: removal)
        // d2 holds the value under a context covering the removal (a page of a reply left it so).
        var device = try ReplicatedMap(entries: ["k": [value], "j": [kept]], context: VersionVector(["d1": 3]))
        let reply = try fixture.push("d2", device.entries, ["d1": 3], basis: VersionVector(["d1": 3]))
        if skipsRepair {
            #expect(reply.kind == .delta)
            _ = device.apply(reply.delta)
            #expect(device.siblings(forKey: "k") == [value], "without the repair the device is not told (the test shows the fix matters)")
        } else {
            #expect(reply.kind == .fullState && reply.keys == .all)
            _ = device.join(try ReplicatedMap(entries: reply.delta.entries, context: reply.delta.context), keys: .all)
            #expect(device.siblings(forKey: "k").isEmpty, "the device dropped the value")
            #expect(device.siblings(forKey: "j") == [kept])
        }
    }

    /// No full state when a dot of the pushed key names a write the hub holds under another
    /// key: the device reused the counter, and a full state would drop its write without
    /// giving it the hub's (a review's case); a collected key pushed beside it still gets
    /// one. Nor for a push of tombstones alone the hub collected: the device collects them
    /// itself.
    @Test func noFullStateForACollectedKeyUnderAReusedDotOrHoldingOnlyRemovals() throws {
        var fixture = DroppedSiblingFixture()
        let value = Sibling(dot: Dot(replica: "d1", counter: 1), timestamp: DroppedSiblingFixture.stamp(1), value: .string("removed later"))
        let kept = Sibling(dot: Dot(replica: "d1", counter: 2), timestamp: DroppedSiblingFixture.stamp(2), value: .string("kept"))
        let removal = Sibling(dot: Dot(replica: "d1", counter: 3), timestamp: DroppedSiblingFixture.stamp(3), value: nil)
        try fixture.writeRemoveAndCollect(value, beside: kept, removal: removal)
        let reused = Sibling(dot: kept.dot, timestamp: DroppedSiblingFixture.stamp(4), value: .string("another write under d1:2"))
        let reply = try fixture.push("d2", ["k": [reused]], ["d1": 3], basis: VersionVector(["d1": 3]))
        #expect(reply.kind == .delta)
        let removals = try fixture.push("d2", ["k": [removal]], ["d1": 3], basis: VersionVector(["d1": 3]))
        #expect(removals.kind == .delta)
        let both = try fixture.push("d2", ["k": [value], "m": [reused]], ["d1": 3], basis: VersionVector(["d1": 3]))
        #expect(both.kind == .fullState, "the collected key is answered though another key of the push reused a dot")
    }
}

/// A hub that devices push to.
private struct DroppedSiblingFixture {
    var hub = HubSyncMachine(hubID: "hub")
    var compensations: [HubCompensation] = []

    static func stamp(_ wall: UInt64) -> HybridTimestamp { HybridTimestamp(wallMilliseconds: wall, logical: 0) }

    /// `basis`: what the device believes the hub holds (see ``SyncPush/basis``); a push
    /// with none is the device's whole state.
    mutating func push(_ device: ReplicaID, _ entries: [String: [Sibling]], _ context: [ReplicaID: UInt64],
                       basis: VersionVector = VersionVector()) throws -> SyncReply {
        var push = SyncPush(account: .default, device: device, delta: ReplicatedMap.Delta(entries: entries, context: VersionVector(context)))
        push.basis = basis
        let message = SyncMessage.push(push)
        guard case .reply(let reply) = try hub.receive(message, nowMilliseconds: 1, compensations: &compensations) else {
            Issue.record("the hub did not answer \(device)'s push with a reply")
            return SyncReply(account: .default, kind: .delta, delta: ReplicatedMap().asDelta, stableFrontier: VersionVector(), rejectedKeys: [])
        }
        return reply
    }

    /// d1 writes `value` of `k` and `kept` of `j`, d2 is sent both, d1 removes `k` with
    /// `removal`, both acknowledge it, and the hub collects it.
    mutating func writeRemoveAndCollect(_ value: Sibling, beside kept: Sibling, removal: Sibling) throws {
        _ = try push("d1", ["k": [value], "j": [kept]], ["d1": 2])
        _ = try push("d2", [:], [:])
        _ = try push("d1", ["k": [removal]], ["d1": 3], basis: VersionVector(["d1": 2]))
        let sent = try push("d2", [:], ["d1": 2], basis: VersionVector(["d1": 2]))
        #expect(sent.delta.context == VersionVector(["d1": 3]))
        _ = try push("d2", [:], ["d1": 3], basis: VersionVector(["d1": 3]))
        _ = try push("d1", [:], ["d1": 3], basis: VersionVector(["d1": 3]))
        #expect(hub.state(of: .default).siblings(forKey: "k").isEmpty)
        #expect(hub.tombstonesCollected(in: .default) == 1, "the hub collected the removal")
    }

    /// d2 writes `k`, d0 replaces it, and d1 is sent the counters of both (the hub believes a
    /// device's claims on others' writes only as far as it sent them).
    ///
    /// - Returns: d2's write and d0's, which replaced it.
    mutating func replaceAWriteAndSendD1Both(replacingValue: String = "replacing") throws -> (replaced: Sibling, replacing: Sibling) {
        let replaced = Sibling(dot: Dot(replica: "d2", counter: 4), timestamp: Self.stamp(1), value: .string("replaced"))
        let replacing = Sibling(dot: Dot(replica: "d0", counter: 1), timestamp: Self.stamp(2), value: .string(replacingValue))
        _ = try push("d2", ["k": [replaced]], ["d2": 4])
        _ = try push("d0", [:], [:])
        let replacingPush = try push("d0", ["k": [replacing]], ["d0": 1, "d2": 4])
        #expect(replacingPush.delta.entries["k"] == nil, "a push holding nothing the hub dropped is answered with nothing of its keys")
        let first = try push("d1", [:], [:])
        #expect(first.delta.context == VersionVector(["d0": 1, "d2": 4]))
        return (replaced, replacing)
    }
}
