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
        var hub = HubSyncMachine(hubID: "hub")
        hub._skipsRepair = skipsRepair
        let stamp = { (wall: UInt64) in HybridTimestamp(wallMilliseconds: wall, logical: 0) }
        let replaced = Sibling(dot: Dot(replica: "d2", counter: 4), timestamp: stamp(1), value: .string("replaced"))
        let replacing = Sibling(dot: Dot(replica: "d0", counter: 1), timestamp: stamp(2), value: .string("replacing"))
        var compensations: [HubCompensation] = []
        func push(_ device: ReplicaID, _ entries: [String: [Sibling]], _ context: [ReplicaID: UInt64]) throws -> SyncReply {
            let message = SyncMessage.push(SyncPush(account: .default, device: device,
                                                    delta: ReplicatedMap.Delta(entries: entries, context: VersionVector(context))))
            guard case .reply(let reply) = try hub.receive(message, nowMilliseconds: 1, compensations: &compensations) else {
                Issue.record("the hub did not answer \(device)'s push with a reply")
                return SyncReply(account: .default, kind: .delta, delta: ReplicatedMap().asDelta, stableFrontier: VersionVector(), rejectedKeys: [])
            }
            return reply
        }
        // d0 is sent d2's write (the hub believes a device's claims on others' writes only as
        // far as it sent them), and replaces it.
        _ = try push("d2", ["k": [replaced]], ["d2": 4])
        _ = try push("d0", [:], [:])
        let replacingPush = try push("d0", ["k": [replacing]], ["d0": 1, "d2": 4])
        #expect(replacingPush.delta.entries["k"] == nil, "a push holding nothing the hub dropped is answered with nothing of its keys")
        // d1 is sent both writes' counters (so the hub believes its claims on them), then
        // pushes a write of its own and the key, holding both.
        let first = try push("d1", [:], [:])
        #expect(first.delta.context == VersionVector(["d0": 1, "d2": 4]))
        let mine = Sibling(dot: Dot(replica: "d1", counter: 1), timestamp: stamp(3), value: .string("mine"))
        var device = try ReplicatedMap(entries: ["k": [replacing, replaced], "j": [mine]], context: VersionVector(["d0": 1, "d1": 1, "d2": 4]))
        let reply = try push("d1", device.entries, ["d0": 1, "d1": 1, "d2": 4])
        #expect(hub.state(of: .default).siblings(forKey: "k") == [replacing], "the hub dropped the replaced write again")
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
}
