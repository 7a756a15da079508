@testable import Converge
import ConvergeSimulation
import Testing

/// A hub retires exactly the members silent for longer than its retirement interval, however
/// rarely it looks at them all (it remembers when the first may be due): checked against
/// last-seen times the test keeps itself, over random pushes and looks whose clock sometimes
/// goes back, as a server's may.
@Suite("Hub retirement: exactly the members silent past the interval")
struct HubRetirementTests {
    @Test(arguments: 0..<8)
    func exactlyTheSilentMembersAreRetired(seed: UInt64) throws {
        var random = Xoshiro256StarStar(seed: seed)
        let interval: UInt64 = 100
        var hub = HubSyncMachine(retirementIntervalMilliseconds: interval)
        let devices = (0..<5).map { ReplicaID("d\($0)")! }
        // The oracle: when each member was last seen, and who is retired.
        var lastSeen: [ReplicaID: UInt64] = [:]
        var retired: Set<ReplicaID> = []
        var now: UInt64 = 1_000
        for step in 0..<300 {
            if random.next(below: 10) == 0 {
                now -= min(now, UInt64(random.next(in: 1...150)))
            } else {
                now += UInt64(random.next(in: 0...40))
            }
            let silent = lastSeen.filter { now > $0.value + interval }.keys.sorted()
            for device in silent {
                lastSeen[device] = nil
                retired.insert(device)
            }
            if random.next(below: 3) == 0 {
                let looked = hub.retireSilentMembers(nowMilliseconds: now)
                #expect(looked.map(\.device) == silent, "seed \(seed) step \(step) at \(now)")
            } else {
                // A push retires the silent members first, then its device is seen (a
                // retired one returns).
                let device = devices[random.next(below: devices.count)]
                let push = SyncPush(account: .default, device: device, delta: ReplicatedMap.Delta(entries: [:], context: VersionVector()))
                _ = try hub.receive(push, nowMilliseconds: now)
                lastSeen[device] = now
                retired.remove(device)
            }
            #expect(hub.members(of: .default) == lastSeen.keys.sorted(), "seed \(seed) step \(step) at \(now)")
            #expect(hub.retiredMembers(of: .default) == retired.sorted(), "seed \(seed) step \(step) at \(now)")
        }
    }

    /// A member seen at an earlier time than the others (the hub's clock was set back) is
    /// due earlier than the hub last reckoned: it is retired on time.
    @Test func aMemberSeenAfterTheClockWentBackIsRetiredOnTime() throws {
        var hub = HubSyncMachine(retirementIntervalMilliseconds: 100)
        let nothing = ReplicatedMap.Delta(entries: [:], context: VersionVector())
        _ = try hub.receive(SyncPush(account: .default, device: "early", delta: nothing), nowMilliseconds: 1_000)
        #expect(hub.retireSilentMembers(nowMilliseconds: 1_050).isEmpty) // the first member is due after 1,100
        _ = try hub.receive(SyncPush(account: .default, device: "late", delta: nothing), nowMilliseconds: 500)
        let retired = hub.retireSilentMembers(nowMilliseconds: 601)
        #expect(retired.map(\.device) == ["late"])
        #expect(hub.members(of: .default) == ["early"])
    }

    /// A state restored from storage brings members the machine has not looked at: the
    /// time it reckoned the first member due no longer holds, and a member of the restored
    /// state seen long ago is retired on time.
    @Test func aMemberOfARestoredStateIsRetiredOnTime() throws {
        let nothing = ReplicatedMap.Delta(entries: [:], context: VersionVector())
        let other = AccountID("other")
        var stored = HubSyncMachine(retirementIntervalMilliseconds: 100)
        _ = try stored.receive(SyncPush(account: other, device: "old", delta: nothing), nowMilliseconds: 10)
        var hub = HubSyncMachine(retirementIntervalMilliseconds: 100)
        _ = try hub.receive(SyncPush(account: .default, device: "early", delta: nothing), nowMilliseconds: 1_000)
        #expect(hub.retireSilentMembers(nowMilliseconds: 1_050).isEmpty) // the first member is due after 1,100
        try hub.restoreState(try #require(stored.encodedState(of: other)), of: other)
        let retired = hub.retireSilentMembers(nowMilliseconds: 1_050)
        #expect(retired.map(\.account) == [other] && retired.map(\.device) == ["old"])
    }

    /// An interval too long to add to a time never runs out (it does not wrap around to a
    /// deadline in the past).
    @Test func anIntervalTooLongToAddNeverRetires() throws {
        var hub = HubSyncMachine(retirementIntervalMilliseconds: .max)
        let nothing = ReplicatedMap.Delta(entries: [:], context: VersionVector())
        _ = try hub.receive(SyncPush(account: .default, device: "phone", delta: nothing), nowMilliseconds: 1_000)
        #expect(hub.retireSilentMembers(nowMilliseconds: .max).isEmpty)
        #expect(hub.members(of: .default) == ["phone"])
    }
}
