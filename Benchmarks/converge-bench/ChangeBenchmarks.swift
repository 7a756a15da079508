import Converge
import Foundation

/// Whether costs follow what changed rather than the size of the whole state: one changed
/// key in a small and in a large state, one push to a hub with few and with many members,
/// and the bytes of a reply carrying one key.
enum ChangeBenchmarks {
    static let small = 1_000
    static let large = 1_000_000
    static let wall: UInt64 = 1_700_000_000_000

    static func timestamp(_ index: Int) -> HybridTimestamp {
        HybridTimestamp(wallMilliseconds: wall - 10_000_000 + UInt64(index / 1_000), logical: UInt32(index % 1_000))
    }

    /// A map of `count` keys written by one replica.
    static func map(keys count: Int) -> ReplicatedMap {
        var map = ReplicatedMap()
        for index in 0..<count { map.write(.integer(Int64(index)), forKey: "key-\(index)", replica: "writer", timestamp: timestamp(index)) }
        return map
    }

    /// A verdict on a cost at the large size against the small one: at most `limit` times.
    static func scaling(name: String, unit: String = "ns", smallCost: Double, largeCost: Double, limit: Double = 2) -> BenchmarkResult {
        BenchmarkResult(name: name, figures: [
            ("\(unit)_at_1k_keys", smallCost), ("\(unit)_at_1m_keys", largeCost),
        ], ratio: largeCost / smallCost, atMost: limit)
    }

    /// delta.1key: `delta(for:)` for a peer that lacks exactly one write, at 1,000 and at
    /// 1,000,000 keys.
    static func oneKeyDelta() -> BenchmarkResult {
        func cost(keys count: Int) -> Double {
            var map = map(keys: count)
            let peer = map.context
            map.write(.string("changed"), forKey: "key-0", replica: "writer", timestamp: timestamp(count))
            return Measure.nanosecondsPerOperation {
                let delta = map.delta(for: peer)
                precondition(delta.entries.count == 1 && delta.entries["key-0"]?.first?.value == .string("changed"))
            }.nanoseconds
        }
        return scaling(name: "delta.1key", smallCost: cost(keys: small), largeCost: cost(keys: large))
    }

    /// merge.1key: `store.merge` of a delta carrying one key (another replica's new write),
    /// into an in-memory store of 1,000 and of 1,000,000 keys.
    static func oneKeyMerge() -> BenchmarkResult {
        func cost(keys count: Int) -> Double {
            let store = StoreBenchmarks.emptyStore()
            try! store.setValues((0..<count).map { (key: "key-\($0)", value: Value.integer(Int64($0))) })
            var peer = ReplicatedMap()
            var last: Int64 = -1
            let cost = Measure.nanosecondsPerOperation(prepare: { index -> ReplicatedMap.Delta in
                let before = peer.context
                peer.write(.integer(Int64(index)), forKey: "merged", replica: "peer", timestamp: timestamp(index))
                let delta = peer.delta(for: before)
                precondition(delta.entries.count == 1)
                last = Int64(index)
                return delta
            }) { delta in
                let changed = try! store.merge(delta)
                precondition(changed == ["merged"])
            }.nanoseconds
            precondition(store.value(forKey: "merged") == .integer(last) && store.usage.keyCount == count + 1)
            return cost
        }
        return scaling(name: "merge.1key", smallCost: cost(keys: small), largeCost: cost(keys: large))
    }

    /// hub.push.keys: the hub handling a push of one key (decoding it, applying it and
    /// encoding its reply) from a device that holds the hub's context, with 2 members, at
    /// 1,000 and at 1,000,000 keys.
    static func hubPushByKeys() -> BenchmarkResult {
        func cost(keys count: Int) -> Double {
            var fixture = HubFixture(keys: count, members: 2)
            return fixture.pushCost(from: 0)
        }
        return scaling(name: "hub.push.keys", smallCost: cost(keys: small), largeCost: cost(keys: large))
    }

    /// The hub of 1,540 members (one key each), shared by the two benchmarks that need it:
    /// joining them is slow while pushes cost O(members).
    nonisolated(unsafe) static var manyMembers: HubFixture?
    static func hubWithManyMembers() -> HubFixture {
        if let hub = manyMembers { return hub }
        let hub = HubFixture(keys: 1_540, members: 1_540)
        manyMembers = hub
        return hub
    }

    /// hub.push.members: the same push with 1,540 members against 2, both hubs holding
    /// 1,540 keys.
    static func hubPushByMembers() -> BenchmarkResult {
        var few = HubFixture(keys: 1_540, members: 2)
        var many = hubWithManyMembers()
        let fewCost = few.pushCost(from: 0), manyCost = many.pushCost(from: 0)
        return BenchmarkResult(name: "hub.push.members", figures: [
            ("ns_at_2_members", fewCost), ("ns_at_1540_members", manyCost),
            ("join_1540_members_s", many.joinMilliseconds / 1_000),
        ], ratio: manyCost / fewCost, atMost: 2)
    }

    /// hub.reply.bytes: the reply that brings a device one key another device wrote, at
    /// 1,540 replicas, when the hub knows the device's context (its last reply was taken):
    /// the answer to a poll (the goal), and to a push of the device's own write.
    static func oneKeyReplyBytes() -> BenchmarkResult {
        var fixture = hubWithManyMembers()
        let (readerMachine, readerState) = fixture.deviceHoldingHubContext(0)
        var reader = readerMachine
        // The reader acknowledges the hub's context: from now on the hub knows what it holds.
        let acknowledgement = try! SyncMessage.push(reader.push(from: readerState)).encoded()
        let acknowledged = fixture.exchange(acknowledgement)
        let actions = reader.receive(try! SyncMessage(encoded: acknowledged))
        guard case .applyDelta(let nothing)? = actions.first, nothing.entries.isEmpty, reader.hubContext == readerState.context else {
            fatalError("the acknowledgement was answered with \(actions)")
        }
        // Another member writes one key and pushes it.
        let key = "changed", value = Value.string("a new value")
        let (writer, writerHolding) = fixture.deviceHoldingHubContext(1)
        var writerState = writerHolding
        writerState.write(value, forKey: key, replica: writer.device, timestamp: timestamp(1))
        let push = try! SyncMessage.push(writer.push(from: writerState)).encoded()
        _ = fixture.exchange(push)
        // The reader asks (a poll: it holds exactly what the hub last told it) and is answered.
        let request = reader.request(from: readerState)
        guard case .poll = request else { preconditionFailure("the reader should poll, not \(request)") }
        let poll = try! request.encoded()
        let reply = fixture.exchange(poll)
        guard case .reply(let decoded) = try! SyncMessage(encoded: reply), decoded.delta.entries.count == 1,
              decoded.delta.entries[key]?.first?.value == value else { preconditionFailure("the reply does not carry the one key") }
        // What the reply would have been whole (to a device that does not accept a relative
        // one): the same reply with the context and frontier the reader joins it into.
        guard let whole = decoded.resolved(againstContext: reader.hubContext, stableFrontier: reader.stableFrontier) else {
            preconditionFailure("the reply is relative to something the reader does not hold")
        }
        let wholeBytes = try! SyncMessage.reply(whole).encoded().count
        // The reader takes that reply; the writer writes another key, and the reader pushes a
        // write of its own: the answer to its push brings the writer's key, relative too.
        _ = reader.receive(.reply(decoded))
        var nextWriterState = writerState
        nextWriterState.write(value, forKey: key + "-again", replica: writer.device, timestamp: timestamp(2))
        _ = fixture.exchange(try! SyncMessage.push(writer.push(from: nextWriterState)).encoded())
        var pushingState = readerState
        pushingState.apply(whole.delta)
        pushingState.write(.string("mine"), forKey: "pushed", replica: reader.device, timestamp: timestamp(3))
        let readerPush = reader.push(from: pushingState)
        precondition(readerPush.relativeReplyDigest != nil, "the reader's push takes no relative reply")
        let pushAnswer = fixture.exchange(try! SyncMessage.push(readerPush).encoded())
        guard case .reply(let pushReply) = try! SyncMessage(encoded: pushAnswer), pushReply.relativeTo != nil,
              pushReply.delta.entries.count == 1, pushReply.delta.entries[key + "-again"] != nil,
              let wholePushReply = pushReply.resolved(againstContext: reader.hubContext, stableFrontier: reader.stableFrontier) else {
            preconditionFailure("the answer to the reader's push is not a relative reply carrying the writer's key")
        }
        let payload = key.utf8.count + value.encodedSize
        let limit = 100 + payload
        return BenchmarkResult(name: "hub.reply.bytes", figures: [
            ("replicas", Double(readerState.context.count)), ("reply_bytes", Double(reply.count)), ("key_and_value_bytes", Double(payload)),
            ("whole_reply_bytes", Double(wholeBytes)), ("poll_bytes", Double(poll.count)), ("push_bytes", Double(push.count)),
            ("push_answer_bytes", Double(pushAnswer.count)),
            ("whole_push_answer_bytes", Double(try! SyncMessage.reply(wholePushReply).encoded().count)),
        ], goal: "reply_bytes <= 100 + key_and_value_bytes (\(limit))", met: reply.count <= limit)
    }
}

/// A hub whose `keys` keys were written by `members` devices, each of which has joined with
/// one push (member *i* writes keys *i*, *i* + `members`, ...) and then acknowledged the
/// whole state.
struct HubFixture {
    static let now: UInt64 = ChangeBenchmarks.wall
    var hub = HubSyncMachine(quota: .unlimited)
    let members: [ReplicaID]
    /// The CPU time the hub took to take every member's first push.
    private(set) var joinMilliseconds = 0.0

    init(keys: Int, members count: Int) {
        members = (0..<count).map { ReplicaID("device-\($0)")! }
        // What the hub last sent each member: the basis of its next push, as a device's
        // sync machine names it. (A push with no basis is a device's whole state, which the
        // hub joins as one: a member claiming everything and holding nothing would make the
        // hub drop every key.)
        var sent: [VersionVector] = []
        for (index, device) in members.enumerated() {
            var state = ReplicatedMap()
            for key in stride(from: index, to: keys, by: count) {
                state.write(.integer(Int64(key)), forKey: "key-\(key)", replica: device, timestamp: ChangeBenchmarks.timestamp(key))
            }
            let push = SyncPush(account: .default, device: device, delta: state.delta(for: VersionVector()))
            let start = Measure.threadCPUMilliseconds()
            let reply = try! hub.receive(push, nowMilliseconds: Self.now)
            joinMilliseconds += Measure.threadCPUMilliseconds() - start
            precondition(reply.rejectedKeys.isEmpty)
            sent.append(reply.delta.context)
        }
        precondition(hub.members(of: .default).count == count && hub.state(of: .default).entries.count == keys)
        // Then every member takes the whole state and says so, as devices in a steady state
        // have: the hub's replies carry a stable frontier as large as its context.
        // The hub believes what a device claims of others only up to what it sent it, so
        // every member is first sent the whole state, then shows it holds it.
        let context = hub.state(of: .default).context
        for round in 0..<3 {
            for (index, device) in members.enumerated() {
                // First each member claims only what it was sent, and is sent the rest (in
                // pages when it is large); then it holds, and claims, the whole context.
                var reply: SyncReply
                repeat {
                    let holding = round == 0 ? sent[index] : context
                    reply = try! hub.receive(SyncPush(account: .default, device: device, delta: ReplicatedMap.Delta(entries: [:], context: holding),
                                                      basis: sent[index]),
                                             nowMilliseconds: Self.now)
                    guard reply.kind == .delta, round == 0 || (reply.delta.entries.isEmpty && !reply.moreToCome) else {
                        fatalError("member \(device) was answered in round \(round) with a \(reply.kind) of \(reply.delta.entries.count) keys")
                    }
                    sent[index].formUnion(reply.delta.context)
                } while reply.moreToCome
                guard round < 2 || reply.stableFrontier == context else { fatalError("member \(device) was not told that everything is stable") }
            }
        }
        guard hub.state(of: .default).entries.count == keys, hub.state(of: .default).context == context else {
            fatalError("the hub no longer holds the \(keys) keys its members wrote")
        }
    }

    /// What the hub does with one request from the network: decode, handle, encode.
    mutating func exchange(_ request: [UInt8]) -> [UInt8] {
        var compensations: [HubCompensation] = []
        let answer = try! hub.receive(try! SyncMessage(encoded: request), nowMilliseconds: Self.now, compensations: &compensations)
        return try! answer.encoded()
    }

    /// Member `index` as it is after taking a reply with the hub's whole context: its sync
    /// machine, and a state made of that context (a device's own entries play no part in
    /// what it pushes next).
    func deviceHoldingHubContext(_ index: Int) -> (DeviceSyncMachine, ReplicatedMap) {
        let context = hub.state(of: .default).context
        var machine = DeviceSyncMachine(device: members[index])
        _ = machine.receive(.reply(SyncReply(account: .default, kind: .delta, delta: ReplicatedMap.Delta(entries: [:], context: context),
                                             stableFrontier: VersionVector(), rejectedKeys: [])))
        var state = ReplicatedMap()
        state.apply(ReplicatedMap.Delta(entries: [:], context: context))
        return (machine, state)
    }

    /// The hub's CPU time per push, in nanoseconds, for pushes of one key (the same key,
    /// rewritten each time) by member `index`, which takes each answer before its next push,
    /// as a device in a steady state does: from the second push on, each answer is relative
    /// to the one before.
    mutating func pushCost(from index: Int) -> Double {
        var (machine, holding) = deviceHoldingHubContext(index)
        var state = holding
        let device = members[index]
        // A copy of the hub takes each push first, untimed, and the member takes its answer
        // before making the next (the benchmark makes a batch's pushes before timing them);
        // the hub then takes the same pushes, timed, and answers them as the copy did.
        var ahead = self
        var last = 0, answers = 0, relativeAnswers = 0
        let cost = Measure.nanosecondsPerOperation(prepare: { write -> [UInt8] in
            state.write(.integer(Int64(write)), forKey: "pushed", replica: device, timestamp: ChangeBenchmarks.timestamp(write))
            let push = machine.push(from: state)
            precondition(push.delta.entries.count == 1)
            last = write
            let request = try! SyncMessage.push(push).encoded()
            _ = machine.receive(try! SyncMessage(encoded: ahead.exchange(request)))
            return request
        }) { request in
            let answer = exchange(request)
            answers += 1
            if answer[1] == 6 { relativeAnswers += 1 }
        }.nanoseconds
        // Every answer but the first (the member's frontier was not the hub's record) is relative.
        precondition(relativeAnswers == answers - 1, "\(relativeAnswers) of \(answers) answers are relative")
        let pushed = hub.state(of: .default).visibleValue(forKey: "pushed", policy: .lastWriterWins)
        precondition(pushed == .integer(Int64(last)), "the hub does not hold the last push")
        return cost
    }
}
