import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Testing

@Suite("Sync messages: versioned encoding, limits and untrusted input")
struct SyncMessageTests {
    static func sampleMessages(using generator: inout Xoshiro256StarStar) -> [SyncMessage] {
        var state = ReplicatedMap()
        for index in 0..<generator.next(in: 1...6) {
            let replica = History.replicaID(generator.next(below: 3))
            let value: Value? = generator.chance(0.2) ? nil : Value.random(using: &generator, depth: 2)
            state.write(value ?? 1, forKey: "k\(generator.next(below: 4))", replica: replica,
                        timestamp: HybridTimestamp(wallMilliseconds: UInt64(index), logical: 0))
        }
        // Pages: a delta cut to a few dozen bytes, with its partial keys, and a full state's
        // page for a span of keys.
        let page = state.delta(for: VersionVector(), maximumBytes: generator.next(in: 20...120))
        let span = state.fullStatePage(after: generator.chance(0.5) ? nil : "k0", within: state.context, maximumBytes: generator.next(in: 20...120))
        let acknowledged: String? = generator.chance(0.5) ? nil : "k\(generator.next(below: 4))"
        return [
            .push(SyncPush(account: "acct", device: "phone", delta: state.asDelta)),
            .push(SyncPush(account: "acct", device: "phone", delta: page.delta, acknowledgesFullState: acknowledged != nil || generator.chance(0.5),
                           acknowledgedThrough: acknowledged, moreToCome: !page.complete, partialKeys: page.partialKeys)),
            .reply(SyncReply(account: "acct", kind: generator.chance(0.5) ? .delta : .fullState, delta: state.asDelta,
                             stableFrontier: state.context, rejectedKeys: generator.chance(0.5) ? ["k1"] : [])),
            .reply(SyncReply(account: "acct", kind: .delta, delta: page.delta, stableFrontier: VersionVector(), rejectedKeys: [],
                             moreToCome: !page.complete, partialKeys: page.partialKeys)),
            .reply(SyncReply(account: "acct", kind: .fullState, delta: span.delta, stableFrontier: VersionVector(), rejectedKeys: [],
                             keys: span.keys, repairedKeys: generator.chance(0.5) ? span.keys : nil)),
            // A repair: the device's whole state for a span of keys, and the reply that
            // acknowledges it.
            .push(SyncPush(account: "acct", device: "phone", delta: span.delta, basis: state.context, fullStateKeys: span.keys)),
            .reply(SyncReply(account: "acct", kind: .delta, delta: page.delta, stableFrontier: VersionVector(), rejectedKeys: [],
                             moreToCome: !page.complete, partialKeys: page.partialKeys, repairedKeys: span.keys)),
            .gossip(SyncGossip(account: "acct", sender: "tablet", delta: state.asDelta, wantsReply: generator.chance(0.5))),
            .poll(SyncPoll(account: "acct", device: "phone", digest: state.context.digest)),
            .poll(SyncPoll(account: "acct", device: "phone", digest: state.context.digest, acceptsRelativeReply: true)),
            .reply(SyncReply(account: "acct", kind: .delta, delta: state.asDelta, stableFrontier: state.context, rejectedKeys: [])
                .relative(toContext: VersionVector(), stableFrontier: VersionVector())!),
            .upToDate("acct"),
        ]
    }

    @Test func messagesRoundTrip() throws {
        var generator = Xoshiro256StarStar(seed: 1)
        for _ in 0..<500 {
            for message in Self.sampleMessages(using: &generator) {
                #expect(try SyncMessage(encoded: message.encoded()) == message)
            }
        }
    }

    @Test func aMillionRandomAndMutatedInputsNeverCrashTheDecoder() throws {
        // Seeded, so a crash is reproducible; `CONVERGE_PROPERTY_SCALE` multiplies it.
        var generator = Xoshiro256StarStar(seed: 2_024)
        var valid: [[UInt8]] = []
        for _ in 0..<64 { valid += try Self.sampleMessages(using: &generator).map { try $0.encoded() } }
        var accepted = 0
        let rounds = 1_000_000 * PropertyConfiguration.scale
        for round in 0..<rounds {
            var bytes = valid[round % valid.count]
            switch round % 4 {
            case 0:  // flip one to three bytes
                for _ in 0..<generator.next(in: 1...3) {
                    bytes[generator.next(below: bytes.count)] = UInt8(truncatingIfNeeded: generator.next())
                }
            case 1:  // truncate
                bytes.removeLast(generator.next(in: 1...bytes.count))
            case 2:  // insert a byte
                bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: generator.next(below: bytes.count + 1))
            default:  // random bytes after a valid header
                bytes = [SyncMessage.magic, SyncMessage.formatVersion, UInt8(generator.next(in: 1...5))]
                    + (0..<generator.next(below: 40)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            }
            // Half the inputs get a valid checksum again, so the decoder behind it is
            // exercised too, not only the checksum.
            if (round / 4) % 2 == 1 {
                bytes = CRC32C.sealed(round % 4 == 3 ? bytes : Array(bytes.dropLast(min(4, bytes.count))))
            }
            if let message = try? SyncMessage(encoded: bytes) {
                accepted += 1
                // Whatever is accepted is canonical: it encodes back to the same bytes but the
                // version (each version read is written in the oldest that can express the
                // message), and so the checksum.
                #expect(try message.encoded() == Self.resealed(bytes, asVersion: message.writtenFormatVersion))
            }
        }
        #expect(accepted < rounds / 2)
    }

    /// `bytes`, a sealed message of the current version, as version `version` would seal it.
    static func resealed(_ bytes: [UInt8], asVersion version: UInt8) -> [UInt8] {
        var body = Array(bytes.dropLast(4))
        body[1] = version
        return CRC32C.sealed(body)
    }

    /// Version 3 (what shared folders on users' disks hold, and older peers send) is still
    /// read, and written back as version 4, the oldest written (these messages need nothing
    /// of version 5); a version-3 gossip cannot carry the flags version 4 added, and
    /// versions 2 and 7 are refused.
    @Test func aVersion3MessageIsStillReadAndWrittenInTheCurrentVersion() throws {
        #expect(SyncMessage.formatVersion == 6 && SyncMessage.oldestReadableFormatVersion == 3 && SyncMessage.oldestWrittenFormatVersion == 4)
        var gossip = SyncGossip(account: "a", sender: "phone",
                                delta: ReplicatedMap.Delta(entries: [:], context: VersionVector(["phone": 2])), wantsReply: true)
        gossip.writerSessions = try #require(WriterSessions(runs: [.init(firstCounter: 1, session: 7)]))
        var push = SyncPush(account: "a", device: "phone", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector(["phone": 2])))
        push.writerSessions = gossip.writerSessions
        for message in [SyncMessage.gossip(gossip), .push(push), .upToDate("a")] {
            let current = try message.encoded()
            #expect(current[1] == 4)
            let old = Self.resealed(current, asVersion: 3)
            #expect(try SyncMessage(encoded: old) == message)
            #expect(try SyncMessage(encoded: old).encoded() == current)
        }
        var named = gossip
        named.recipient = "laptop"
        named.recipientTip = WriterSessions.Tip(counter: 2, session: 9)
        named.writer = "phone~5"
        let current = try SyncMessage.gossip(named).encoded()
        #expect(try SyncMessage(encoded: current) == .gossip(named))
        // Flags 4, 8 and 16 did not exist in version 3.
        #expect(throws: ConvergeError.malformed(MalformedInput(problem: .unknownTag,
                                                               detail: "invalid gossip flags 31: message format version 3 has no flag 4", offset: 11))) {
            try SyncMessage(encoded: Self.resealed(current, asVersion: 3))
        }
        for version: UInt8 in [2, 7] {
            #expect(throws: ConvergeError.malformed(MalformedInput(problem: .unsupportedVersion,
                                                                   detail: "unsupported message format version \(version)", offset: 1))) {
                try SyncMessage(encoded: Self.resealed(current, asVersion: version))
            }
        }
    }

    /// Where a gossip's flag byte lies: after the magic byte, the version, the type, and the
    /// account and sender (each a one-byte length and its bytes).
    static func gossipFlagOffset(of gossip: SyncGossip) -> Int {
        3 + 1 + gossip.account.rawValue.utf8.count + 1 + gossip.sender.rawValue.utf8.count
    }

    /// Gossip with each of the fields version 5 added, alone and all together (with
    /// `wantsReply` and the sender's sessions, flags 1 and 2): session records of another
    /// writer ID it relays (flag 32), counters withdrawn (flag 64), and the report it was
    /// computed for (flag 128).
    static func gossipsWithTheFieldsOfVersion5() throws -> [SyncGossip] {
        var base = SyncGossip(account: "a", sender: "phone",
                              delta: ReplicatedMap.Delta(entries: [:], context: VersionVector(["phone": 2, "tablet": 3, "watch": 2])),
                              wantsReply: true)
        base.writerSessions = try #require(WriterSessions(runs: [.init(firstCounter: 1, session: 7)]))
        let tabletRuns = try #require(WriterSessions(runs: [.init(firstCounter: 1, session: 11)]))
        let watchRuns = try #require(WriterSessions(runs: [.init(firstCounter: 2, session: 21)]))
        let relayed = try #require(SessionRecord(writer: "tablet", runs: tabletRuns, through: 3))
        let withdrawn = try #require(SessionRecord(writer: "watch", runs: watchRuns, through: 2))
        var relaying = base, withdrawing = base, basing = base, all = base
        relaying.relayedSessions = [relayed]
        withdrawing.withdrawnSessions = [withdrawn]
        basing.basis = VersionVector(["phone": 1])
        all.relayedSessions = [relayed]
        all.withdrawnSessions = [withdrawn]
        all.basis = VersionVector(["phone": 1])
        return [relaying, withdrawing, basing, all]
    }

    /// Gossip is written in version 5, which may carry relayed and withdrawn session records
    /// and the gossip's basis (flags 32, 64 and 128), and read back whole.
    @Test func aVersion5GossipWithRelayedAndWithdrawnSessionsAndABasisRoundTrips() throws {
        let gossips = try Self.gossipsWithTheFieldsOfVersion5()
        let expectedFlags: [UInt8] = [3 | 32, 3 | 64, 3 | 128, 3 | 32 | 64 | 128]
        for (gossip, flags) in zip(gossips, expectedFlags) {
            let bytes = try SyncMessage.gossip(gossip).encoded()
            #expect(bytes[1] == 5)
            #expect(bytes[Self.gossipFlagOffset(of: gossip)] == flags)
            #expect(try SyncMessage(encoded: bytes) == .gossip(gossip))
            #expect(try SyncMessage(encoded: bytes).encoded() == bytes)
        }
    }

    /// Flags 32, 64 and 128 did not exist in format version 4: the same gossip labelled
    /// version 4 (its checksum made right) is refused as malformed, naming the flag, and a
    /// store that receives it is unchanged. A reader of version 4 refuses it too, so no
    /// writer may label it so.
    @Test func theSameGossipLabelledVersion4IsRefusedAndChangesNothing() throws {
        for (gossip, lowestNewFlag) in zip(try Self.gossipsWithTheFieldsOfVersion5(), [32, 64, 128, 32]) {
            let bytes = try SyncMessage.gossip(gossip).encoded()
            let flags = bytes[Self.gossipFlagOffset(of: gossip)]
            let refusal = ConvergeError.malformed(MalformedInput(
                problem: .unknownTag, detail: "invalid gossip flags \(flags): message format version 4 has no flag \(lowestNewFlag)",
                offset: Self.gossipFlagOffset(of: gossip)))
            let relabelled = Self.resealed(bytes, asVersion: 4)
            #expect(throws: refusal) { try SyncMessage(encoded: relabelled) }
            // Version 3 knew none of them either.
            #expect(malformedProblem { try SyncMessage(encoded: Self.resealed(bytes, asVersion: 3)) } == .unknownTag)
        }
        // From a real mesh: the phone heard the tablet, so its gossip to the laptop relays the
        // tablet's sessions; the laptop takes it as written, and nothing of it relabelled.
        let clock = ManualClock()
        let phone = ReplicatedKeyValueStore(replicaID: "phone", clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", clock: clock)
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        try tablet.setValue("from the tablet", forKey: "t")
        try laptop.setValue("the laptop's", forKey: "l")
        try phone.receive(try tablet.gossip(to: "phone"))
        let bytes = try phone.gossip(to: "laptop", wantsReply: false)
        guard case .gossip(let gossip) = try SyncMessage(encoded: bytes) else { Issue.record("not gossip"); return }
        #expect(!gossip.relayedSessions.isEmpty, "the phone's gossip relays no session record")
        let before = laptop.replicatedState
        #expect(malformedProblem { try laptop.receive(Self.resealed(bytes, asVersion: 4)) } == .unknownTag)
        #expect(laptop.replicatedState == before)
        #expect(laptop.value(forKey: "t") == nil)
        try laptop.receive(bytes)
        #expect(laptop.value(forKey: "t") == "from the tablet")
    }

    /// A version-4 message, which carries none of the flags version 5 added, is still read
    /// (older peers send it, and shared folders hold files they wrote) and is written back
    /// in version 4 still, so that hubs and peers not yet upgraded read it, as version 5
    /// relabelled (whatever version 5 gives it adds nothing): gossip with every flag of
    /// version 4 (the sessions' writer ID, the recipient and its tip), a push with write
    /// sessions, a reply naming its device, a poll.
    @Test func aVersion4MessageWithoutTheNewFlagsIsStillRead() throws {
        let sessions = try #require(WriterSessions(runs: [.init(firstCounter: 1, session: 7)]))
        let delta = ReplicatedMap.Delta(entries: [:], context: VersionVector(["phone": 2]))
        var gossip = SyncGossip(account: "a", sender: "phone", delta: delta, wantsReply: true)
        gossip.writerSessions = sessions
        gossip.writer = "phone~5"
        gossip.recipient = "laptop"
        gossip.recipientTip = WriterSessions.Tip(counter: 2, session: 9)
        var push = SyncPush(account: "a", device: "phone", delta: delta)
        push.writerSessions = sessions
        var reply = SyncReply(account: "a", kind: .delta, delta: delta, stableFrontier: VersionVector(), rejectedKeys: [])
        reply.device = "phone"
        reply.sessionTip = WriterSessions.Tip(counter: 2, session: 7)
        let messages: [SyncMessage] = [.gossip(gossip), .push(push), .reply(reply),
                                       .poll(SyncPoll(account: "a", device: "phone", digest: 42)), .upToDate("a")]
        for message in messages {
            let current = try message.encoded()
            #expect(current[1] == 4 && message.writtenFormatVersion == 4)
            let relabelled = Self.resealed(current, asVersion: 5)
            #expect(try SyncMessage(encoded: relabelled) == message)
            #expect(try SyncMessage(encoded: relabelled).encoded() == current)
        }
        #expect(Self.resealed(try SyncMessage.gossip(gossip).encoded(), asVersion: 4)[Self.gossipFlagOffset(of: gossip)] == 31)
    }

    /// A version this build does not know, such as a later peer's 7, is refused as
    /// unsupported, before anything else of the message is read.
    @Test func anUnknownVersion7IsRefusedAsUnsupported() throws {
        let gossip = try #require(try Self.gossipsWithTheFieldsOfVersion5().last)
        for message in [SyncMessage.gossip(gossip), .upToDate("a")] {
            #expect(throws: ConvergeError.malformed(MalformedInput(problem: .unsupportedVersion,
                                                                   detail: "unsupported message format version 7", offset: 1))) {
                try SyncMessage(encoded: Self.resealed(try message.encoded(), asVersion: 7))
            }
        }
        #expect(throws: ConvergeError.malformed(MalformedInput(problem: .unsupportedVersion,
                                                               detail: "unsupported message format version 7", offset: 1))) {
            try SyncMessage(encoded: [SyncMessage.magic, 7, 3])
        }
    }

    /// The gossip fields of version 4 are canonical: a tip without its recipient, a tip at
    /// counter 0, and a writer ID equal to the sender's are refused.
    @Test func gossipRecipientsAndWritersAreCanonical() throws {
        var gossip = SyncGossip(account: "a", sender: "phone", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector()), wantsReply: false)
        gossip.recipient = "laptop"
        gossip.recipientTip = WriterSessions.Tip(counter: 1, session: 3)
        let bytes = Array(try SyncMessage.gossip(gossip).encoded().dropLast(4))
        let flagAt = 3 + 1 + 1 + 1 + 5  // magic, version, tag, "a", "phone"
        #expect(bytes[flagAt] == 24)
        var tipAlone = bytes
        tipAlone[flagAt] = 16
        #expect(malformedProblem { try SyncMessage(encoded: CRC32C.sealed(tipAlone)) } == .unknownTag)
        // The tip's counter, after the recipient's length and 6 bytes.
        var atZero = bytes
        atZero[flagAt + 1 + 1 + 6] = 0
        #expect(malformedProblem { try SyncMessage(encoded: CRC32C.sealed(atZero)) } == .nonCanonical)
        var same = SyncGossip(account: "a", sender: "phone", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector()), wantsReply: false)
        same.writer = "phone"
        // An encoder leaves it out; bytes that name it are refused.
        #expect(try SyncMessage(encoded: try SyncMessage.gossip(same).encoded()) != .gossip(same))
        var named = Array(try SyncMessage.gossip(same).encoded().dropLast(4))
        named[flagAt] = 4
        named.insert(contentsOf: [5] + Array("phone".utf8), at: flagAt + 1)
        #expect(malformedProblem { try SyncMessage(encoded: CRC32C.sealed(named)) } == .nonCanonical)
    }

    @Test func unknownVersionsAndOversizedInputAreRefusedClearly() {
        #expect(throws: ConvergeError.malformed(MalformedInput(problem: .unsupportedVersion, detail: "unsupported message format version 1", offset: 1))) {
            // Version 1, before pushes carried the full-state acknowledgement.
            try SyncMessage(encoded: [SyncMessage.magic, 1, 1])
        }
        #expect(throws: ConvergeError.malformed(MalformedInput(problem: .notConverge, detail: "not a Converge sync message (bad magic byte)", offset: 0))) {
            try SyncMessage(encoded: [0, 1, 1])
        }
        let huge = [UInt8](repeating: 0, count: SyncMessage.maximumEncodedBytes + 1)
        #expect(malformedProblem { try SyncMessage(encoded: huge) } == .limitExceeded)
        // A message cut short says so, and where.
        let push = try! SyncMessage.push(SyncPush(account: "a", device: "phone", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector()))).encoded()
        // Cut short or lengthened, its checksum no longer matches; resealed, the content is
        // what is wrong.
        #expect(malformedProblem { try SyncMessage(encoded: Array(push.dropLast())) } == .damaged)
        #expect(malformedProblem { try SyncMessage(encoded: push + [0]) } == .damaged)
        let body = Array(push.dropLast(4))
        #expect(throws: ConvergeError.malformed(MalformedInput(problem: .truncated, detail: "unexpected end of input", offset: body.count - 1))) {
            try SyncMessage(encoded: CRC32C.sealed(Array(body.dropLast())))
        }
        #expect(malformedProblem { try SyncMessage(encoded: CRC32C.sealed(body + [0])) } == .trailingBytes)
        #expect("\(ConvergeError.malformed(MalformedInput(problem: .truncated, detail: "unexpected end of input", offset: 7)))"
                == "malformed input: unexpected end of input at byte 7")
    }

    /// Size budgets count a version vector's bytes without encoding it; the count must be
    /// what the encoding writes, or a reply could outgrow its budget.
    @Test func aVersionVectorsCountedSizeIsItsEncodedSize() {
        var random = Xoshiro256StarStar(seed: 7)
        for _ in 0..<500 {
            var counters: [ReplicaID: UInt64] = [:]
            for _ in 0..<random.next(below: 40) {
                let name = String(repeating: "r", count: random.next(in: 1...ReplicaID.maximumLengthBytes - 3)) + "\(random.next(below: 100))"
                counters[ReplicaID(name)!] = random.next() >> UInt64(random.next(below: 64))
            }
            let vector = VersionVector(counters.filter { $0.value > 0 })
            var writer = BinaryWriter()
            vector.encode(into: &writer)
            #expect(vector.encodedSize == writer.bytes.count, "\(vector)")
        }
    }

    /// Encodings sort replicas by `ReplicaID`'s `<`, which compares the IDs as `String`s:
    /// for the ASCII a replica ID may hold, that must be the order of their UTF-8 bytes,
    /// the one order every replica and language shares.
    @Test func replicaIDsOrderAsTheirUTF8Bytes() {
        let characters = Array("azAZ09._:@-")
        var random = Xoshiro256StarStar(seed: 11)
        var ids: [ReplicaID] = []
        for _ in 0..<2_000 {
            let base = String((0..<random.next(in: 1...12)).map { _ in random.element(of: characters) })
            guard let id = ReplicaID(base) else { continue }
            ids.append(random.next(below: 4) == 0 ? id.incarnation(UInt64(random.next(in: 2...30))) : id)
        }
        for (a, b) in zip(ids, ids.shuffled(using: &random)) {
            #expect((a < b) == a.rawValue.utf8.lexicographicallyPrecedes(b.rawValue.utf8), "\(a) against \(b)")
        }
    }

    @Test func aSteadyStateExchangeIsSmall() throws {
        // Two devices that have synced and changed nothing: what one exchange costs.
        let hub = InMemoryHub(clock: ManualClock())
        let stores = (0..<16).map { ReplicatedKeyValueStore(replicaID: ReplicaID("device-\($0)")!, hub: hub, clock: ManualClock()) }
        for (index, store) in stores.enumerated() { try store.setValue(.integer(Int64(index)), forKey: "k\(index)") }
        for _ in 0..<2 { for store in stores { #expect(store.synchronize()) } }
        var machine = DeviceSyncMachine(device: "device-0")
        let state = stores[0].replicatedState
        _ = machine.receive(.reply(SyncReply(account: .default, kind: .delta, delta: ReplicatedMap.Delta(entries: [:], context: hub.state().context),
                                             stableFrontier: VersionVector(), rejectedKeys: [])))
        // Prime the hub's record of what it last sent this device, as a real exchange does
        // (the device must receive that reply: its poll names the frontier it carried).
        _ = machine.receive(try SyncMessage(encoded: try hub.exchange(SyncMessage.push(machine.push(from: state)).encoded())))
        let push = try machine.request(from: state).encoded()
        let reply = try hub.exchange(push)
        #expect(try SyncMessage(encoded: reply) == .upToDate(.default))
        print("steady-state exchange, 16 replicas: poll \(push.count) bytes, answer \(reply.count) bytes")
        #expect(push.count + reply.count <= 48)
    }
}
