import Converge
import Testing

/// The sync state machines turn every input into the actions a store carries out.
@Suite("Sync state machines return actions")
struct SyncActionTests {
    let clock = HybridTimestamp(wallMilliseconds: 1, logical: 0)

    func state(_ writes: [(String, Value?)], by replica: ReplicaID = "hub") -> ReplicatedMap {
        var map = ReplicatedMap()
        for (key, value) in writes { map.write(value, forKey: key, replica: replica, timestamp: clock) }
        return map
    }

    @Test func aReplyIsAppliedThenCollectedThenItsRejectedKeysReported() {
        var machine = DeviceSyncMachine(device: "phone", account: "alice")
        let hubState = state([("a", 1), ("gone", nil)])
        let reply = SyncReply(account: "alice", kind: .delta, delta: hubState.asDelta, stableFrontier: hubState.context,
                              rejectedKeys: ["big"])
        #expect(machine.receive(.reply(reply)) == [
            .applyDelta(hubState.asDelta), .collectTombstones(below: hubState.context), .reportRejectedKeys(["big"]),
        ])
        #expect(machine.hubContext == hubState.context && machine.stableFrontier == hubState.context)
        // Now that it holds the hub's context, the device polls.
        guard case .poll = machine.request(from: hubState) else {
            Issue.record("expected a poll")
            return
        }
    }

    @Test func aFullStateIsJoinedWholeAndNothingElseIsAskedForWhenThereIsNothingElse() {
        var machine = DeviceSyncMachine(device: "phone")
        let hubState = state([("a", 1)])
        let reply = SyncReply(account: .default, kind: .fullState, delta: hubState.asDelta, stableFrontier: VersionVector(), rejectedKeys: [])
        #expect(machine.receive(.reply(reply)) == [.joinFullState(hubState.asDelta, keys: .all)])
    }

    @Test func answersOfAnotherAccountAndMessagesForTheHubAreIgnored() {
        var machine = DeviceSyncMachine(device: "phone", account: "alice")
        let reply = SyncReply(account: "bob", kind: .delta, delta: state([("secret", "bob's")]).asDelta,
                              stableFrontier: VersionVector(), rejectedKeys: [])
        #expect(machine.receive(.reply(reply)) == [.ignore(.otherAccount("bob"))])
        #expect(machine.hubContext.isEmpty, "nothing of another account is recorded")
        #expect(machine.receive(.upToDate("alice")) == [])
        #expect(machine.receive(.upToDate("bob")) == [.ignore(.otherAccount("bob"))])
        #expect(machine.receive(.push(SyncPush(account: "alice", device: "tablet", delta: ReplicatedMap().asDelta)))
                == [.ignore(.unexpected)])
    }

    @Test func meshGossipIsAppliedAndAnsweredIfAsked() {
        var machine = MeshSyncMachine(device: "phone")
        let tablet = state([("a", 1)], by: "tablet")
        let ask = SyncGossip(account: .default, sender: "tablet", delta: tablet.asDelta, wantsReply: true)
        #expect(machine.receive(.gossip(ask)) == [.applyDelta(tablet.asDelta), .answer(peer: "tablet")])
        #expect(machine.peerContexts["tablet"] == tablet.context)
        var answer = ask
        answer.wantsReply = false
        #expect(machine.receive(.gossip(answer)) == [.applyDelta(tablet.asDelta)])
        answer.sender = "phone"
        #expect(machine.receive(.gossip(answer)) == [.ignore(.fromSelf)])
        answer.account = "bob"
        #expect(machine.receive(.gossip(answer)) == [.ignore(.otherAccount("bob"))])
        #expect(machine.receive(.upToDate(.default)) == [.ignore(.unexpected)])
    }

    /// A shared folder's file (a broadcast) written under another writer ID of this replica
    /// ID is a twin's or an earlier incarnation's, not this device's own: it is taken. Gossip
    /// between two devices from the replica ID, and a broadcast under the current writer ID,
    /// are this device's own. (Two copies of one store file used to skip each other's files.)
    @Test func aBroadcastFromAnotherIncarnationOfThisReplicaIDIsTaken() {
        var machine = MeshSyncMachine(device: "phone")
        let twin = state([("a", 1)], by: "phone~7")
        var broadcast = SyncGossip(account: .default, sender: "phone", delta: twin.asDelta, wantsReply: false)
        broadcast.writer = "phone~7"
        #expect(machine.receive(.gossip(broadcast), as: "phone~9", holding: VersionVector()) == [.applyDelta(twin.asDelta)])
        #expect(machine.receive(.gossip(broadcast), as: "phone~7", holding: VersionVector()) == [.ignore(.fromSelf)])
        #expect(machine.receive(.gossip(broadcast)) == [.ignore(.fromSelf)], "without a writer ID, the replica ID decides")
        var between = broadcast
        between.wantsReply = true
        #expect(machine.receive(.gossip(between), as: "phone~9", holding: VersionVector()) == [.ignore(.fromSelf)])
    }

    @Test func aBroadcastCarriesWhatIsNewSinceWhatTheMediumHolds() {
        let machine = MeshSyncMachine(device: "phone")
        var phone = state([("a", 1)], by: "phone")
        #expect(machine.broadcast(from: phone, after: nil)?.delta == phone.asDelta, "nothing published: the whole state")
        #expect(machine.broadcast(from: phone, after: phone.context) == nil, "nothing new")
        let published = phone.context
        phone.write(2, forKey: "b", replica: "phone", timestamp: clock)
        #expect(machine.broadcast(from: phone, after: published)?.delta.entries.keys.sorted() == ["b"])
    }
}
