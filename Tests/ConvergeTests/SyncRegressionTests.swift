@testable import Converge
import Testing

/// The sync bugs the simulator found (issue 13), each as the state machines' exchange that
/// showed it: a lost reply, a retired device's return, a compensation under multi-value.
@Suite("Sync regressions: lost frontiers, full states acknowledged, compensations within the quota")
struct SyncRegressionTests {
    static func stamp(_ milliseconds: UInt64) -> HybridTimestamp {
        HybridTimestamp(wallMilliseconds: milliseconds, logical: 0)
    }

    /// A device and its state, carrying out what its machine makes of each answer.
    struct Device {
        var machine: DeviceSyncMachine
        var map = ReplicatedMap()

        init(_ id: ReplicaID, account: AccountID = .default) {
            machine = DeviceSyncMachine(device: id, account: account)
        }

        mutating func take(_ answer: SyncMessage) {
            for action in machine.receive(answer) {
                switch action {
                case .applyDelta(let delta): map.apply(delta)
                case .applyPage(let delta, let partialKeys): map.apply(delta, partialKeys: Set(partialKeys))
                case .joinFullState(let delta, let keys): map.join(try! ReplicatedMap(entries: delta.entries, context: delta.context), keys: keys)
                case .collectTombstones(let frontier): map.collectTombstones(stableFrontier: frontier)
                case .reportRejectedKeys, .answer, .ignore, .withdraw, .adopt: break
                }
            }
        }
    }

    static func exchange(_ hub: inout HubSyncMachine, _ request: SyncMessage, at milliseconds: UInt64) -> SyncMessage {
        var compensations: [HubCompensation] = []
        return try! hub.receive(request, nowMilliseconds: milliseconds, compensations: &compensations)
    }

    @Test func aDeviceThatMissedTheReplyWithTheFrontierIsNotToldItIsUpToDate() {
        var hub = HubSyncMachine(retirementIntervalMilliseconds: 1_000_000)
        var tablet = Device("tablet")
        tablet.take(Self.exchange(&hub, tablet.machine.request(from: tablet.map), at: 1))
        var phone = Device("phone")
        phone.map.write("v", forKey: "k", replica: "phone", timestamp: Self.stamp(1))
        let tombstone = phone.map.write(nil, forKey: "k", replica: "phone", timestamp: Self.stamp(2))!
        // The tablet has not acknowledged the tombstone yet: the phone's reply cannot
        // announce it stable, and from now on the phone holds the hub's context and polls.
        phone.take(Self.exchange(&hub, phone.machine.request(from: phone.map), at: 2))
        #expect(!phone.machine.stableFrontier.contains(tombstone) && phone.map.context == phone.machine.hubContext)
        for time in UInt64(3)..<8 { tablet.take(Self.exchange(&hub, tablet.machine.request(from: tablet.map), at: time)) }
        #expect(hub.state(of: .default).entries["k"] == nil, "the hub collected the tombstone")
        // The one reply that tells the phone the new frontier is lost.
        guard case .reply(let lost) = Self.exchange(&hub, phone.machine.request(from: phone.map), at: 10),
              lost.stableFrontier.contains(tombstone) else {
            Issue.record("expected a reply announcing the frontier")
            return
        }
        #expect(phone.map.entries["k"] != nil && phone.map.context == phone.machine.hubContext)
        // The phone polls again: before the fix the hub answered "up to date" for good, and
        // the phone kept the tombstone forever.
        let request = phone.machine.request(from: phone.map)
        guard case .poll = request else {
            Issue.record("expected a poll, got \(request)")
            return
        }
        let answer = Self.exchange(&hub, request, at: 11)
        guard case .reply(let reply) = answer else {
            Issue.record("the hub answered \(answer) to a device that never received the frontier")
            return
        }
        #expect(reply.stableFrontier.contains(tombstone))
        phone.take(answer)
        #expect(phone.map == hub.state(of: .default))
        // Now it holds the frontier too, and the next poll is answered "up to date".
        #expect(Self.exchange(&hub, phone.machine.request(from: phone.map), at: 12) == .upToDate(.default))
    }

    @Test func aReturningDeviceGetsFullStatesUntilItAcknowledgesOne() {
        var hub = HubSyncMachine(retirementIntervalMilliseconds: 10)
        var phone = Device("phone", account: "alice")
        phone.map.write("v", forKey: "k", replica: "phone", timestamp: Self.stamp(1))
        phone.map.write(nil, forKey: "k", replica: "phone", timestamp: Self.stamp(2))
        phone.take(Self.exchange(&hub, phone.machine.request(from: phone.map), at: 0))
        // A push in another account retires the silent phone: alice has no member left, its
        // frontier is the hub's context and the tombstone is collected.
        var tablet = Device("tablet", account: "bob")
        tablet.map.write("w", forKey: "x", replica: "tablet", timestamp: Self.stamp(3))
        _ = Self.exchange(&hub, tablet.machine.request(from: tablet.map), at: 100)
        #expect(hub.retiredMembers(of: "alice") == ["phone"] && hub.state(of: "alice").entries["k"] == nil)
        // The phone returns; the full state it is sent is lost.
        guard case .reply(let first) = Self.exchange(&hub, phone.machine.request(from: phone.map), at: 200) else {
            Issue.record("expected a reply")
            return
        }
        #expect(first.kind == .fullState)
        // Its next push already covers the hub's context, yet it never joined a full state:
        // before the fix the hub inferred it had and stopped sending one.
        let again = phone.machine.request(from: phone.map)
        #expect(hub.state(of: "alice").context.isDominated(by: phone.map.context))
        if case .push(let push) = again { #expect(!push.acknowledgesFullState) }
        let second = Self.exchange(&hub, again, at: 201)
        guard case .reply(let resent) = second, resent.kind == .fullState else {
            Issue.record("the returning device was answered \(second), not a full state")
            return
        }
        phone.take(second)
        #expect(phone.map.entries["k"] == nil, "joining the full state dropped the collected tombstone")
        // The next request acknowledges it, once; from then on the replies are deltas.
        let acknowledgement = phone.machine.request(from: phone.map)
        guard case .push(let acknowledging) = acknowledgement, acknowledging.acknowledgesFullState else {
            Issue.record("expected a push acknowledging the full state, got \(acknowledgement)")
            return
        }
        guard case .reply(let delta) = Self.exchange(&hub, acknowledgement, at: 202) else {
            Issue.record("expected a reply")
            return
        }
        #expect(delta.kind == .delta)
        phone.take(.reply(delta))
        if case .push(let next) = phone.machine.request(from: phone.map) { #expect(!next.acknowledgesFullState) }
        #expect(phone.map == hub.state(of: "alice"))
    }

    @Test func anAcknowledgementSentBeforeAnyFullStateOfThisReturnCountsForNothing() {
        var hub = HubSyncMachine(retirementIntervalMilliseconds: 10)
        var map = ReplicatedMap()
        map.write("v", forKey: "k", replica: "phone", timestamp: Self.stamp(1))
        let push = SyncPush(account: .default, device: "phone", delta: map.asDelta, acknowledgesFullState: true)
        _ = Self.exchange(&hub, .push(push), at: 0)
        _ = Self.exchange(&hub, .push(SyncPush(account: "other", device: "tablet", delta: ReplicatedMap().asDelta)), at: 100)
        // A stale acknowledgement on the push that returns: the hub has sent nothing yet.
        guard case .reply(let reply) = Self.exchange(&hub, .push(push), at: 200) else {
            Issue.record("expected a reply")
            return
        }
        #expect(reply.kind == .fullState)
    }

    @Test func aCompensationUnderMultiValueRestoresTheSiblingsAsTheyWereWithinTheQuota() throws {
        let quota = Quota(maximumKeyCount: 10, maximumTotalValueBytes: 40, maximumValueBytes: 40, maximumKeyBytes: 64)
        var hub = HubSyncMachine(quota: quota, policies: MergePolicies(default: .multiValue))
        // Two concurrent 12-byte siblings of "k" reach the hub.
        for (replica, time) in [("phone", UInt64(1)), ("tablet", 2)] {
            var map = ReplicatedMap()
            map.write(.string("from \(replica)".padding(toLength: 10, withPad: ".", startingAt: 0)), forKey: "k",
                      replica: ReplicaID(replica)!, timestamp: Self.stamp(time))
            _ = Self.exchange(&hub, .push(SyncPush(account: .default, device: ReplicaID(replica)!, delta: map.asDelta)), at: time)
        }
        let before = hub.state(of: .default)
        let previous = before.siblings(forKey: "k")
        #expect(previous.count == 2)
        // A third device writes a large concurrent value: the merged state would break the
        // quota, so the hub compensates.
        var watch = ReplicatedMap()
        watch.write(.string(String(repeating: "w", count: 30)), forKey: "k", replica: "watch", timestamp: Self.stamp(3))
        var compensations: [HubCompensation] = []
        _ = try hub.receive(.push(SyncPush(account: .default, device: "watch", delta: watch.asDelta)), nowMilliseconds: 3,
                        compensations: &compensations)
        #expect(compensations.count == 1)
        let after = hub.state(of: .default)
        #expect(quota.admits(after.usage), "the hub is over the quota: \(after.usage)")
        #expect(after.usage == before.usage)
        // The previous siblings are back as they were (values and timestamps), each a write
        // of the hub; none is merged into one array value.
        let restored = after.siblings(forKey: "k")
        #expect(restored.map(\.value) == previous.map(\.value))
        #expect(restored.map(\.timestamp) == previous.map(\.timestamp))
        #expect(restored.allSatisfy { $0.dot.replica == hub.hubID })
        #expect(after.visibleValue(forKey: "k", policy: .multiValue) == before.visibleValue(forKey: "k", policy: .multiValue))
        #expect(compensations[0].offending == watch.siblings(forKey: "k").map(\.dot))
        #expect(compensations[0].restoredSiblings == restored)
    }
}
