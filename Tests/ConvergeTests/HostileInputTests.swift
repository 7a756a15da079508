@testable import Converge
import ConvergeSimulation
import Testing

/// Counters, clocks and contexts from peers and hubs are bounded: no input makes a replica
/// or a hub trap, now or later, and no device can claim to have seen writes it never got.
/// Each test is a reproduction of the issue "Hostile and damaged input changes nothing
/// and crashes nothing".
@Suite struct HostileInputTests {
    static let start: UInt64 = 1_700_000_000_000

    static func store(_ id: ReplicaID, clock: ManualClock = ManualClock(startMilliseconds: start)) -> ReplicatedKeyValueStore {
        ReplicatedKeyValueStore(replicaID: id, clock: clock)
    }

    static func gossip(from sender: ReplicaID, _ delta: ReplicatedMap.Delta) throws -> [UInt8] {
        try SyncMessage.gossip(SyncGossip(account: .default, sender: sender, delta: delta, wantsReply: false)).encoded()
    }

    static func malformedProblem(_ body: () throws -> Void) -> MalformedInput.Problem? {
        do { try body() } catch let error as ConvergeError {
            if case .malformed(let input) = error { return input.problem }
        } catch {}
        return nil
    }

    @Test func aContextAtTheEndOfTheCounterRangeIsRefusedAndLaterWritesWork() throws {
        let a = Self.store("A")
        try a.setValue(.string("mine"), forKey: "k")
        // The gossip file of the issue: a context claiming A's counter is 2^64-1.
        let bytes = try Self.gossip(from: "B", ReplicatedMap.Delta(entries: [:], context: VersionVector(["A": .max, "B": .max])))
        #expect(Self.malformedProblem { try a.receive(bytes) } == .outOfRange)
        #expect(Self.malformedProblem { try a.merge(ReplicatedMap.Delta(entries: [:], context: VersionVector(["B": .max]))) } == .outOfRange)
        #expect(a.state.withLock { $0.map.context } == VersionVector(["A": 1]))
        // Writing afterwards neither traps nor reuses a counter.
        try a.setValue(.string("later"), forKey: "k2")
        #expect(a.siblings(forKey: "k2").map(\.dot) == [Dot(replica: "A", counter: 2)])
        // The largest counter accepted still leaves room for the next write.
        var b = ReplicatedMap()
        b.write(.bool(true), forKey: "b", replica: "B", timestamp: HybridTimestamp(wallMilliseconds: Self.start, logical: 0))
        var edge = b.asDelta
        edge.context = VersionVector(["B": Dot.maximumCounter])
        #expect(throws: Never.self) { try ReplicatedMap.Delta(encoded: edge.encoded()) }
        edge.context = VersionVector(["B": Dot.maximumCounter + 1])
        #expect(Self.malformedProblem { _ = try ReplicatedMap.Delta(encoded: edge.encoded()) } == .outOfRange)
    }

    @Test func aTimestampAtTheEndOfTimeIsRefusedAndLaterWritesWork() throws {
        let a = Self.store("A")
        let endOfTime = Sibling(dot: Dot(replica: "B", counter: 1), timestamp: HybridTimestamp(wallMilliseconds: .max, logical: .max),
                                value: .string("forever"))
        let delta = ReplicatedMap.Delta(entries: ["k": [endOfTime]], context: VersionVector(["B": 1]))
        #expect(Self.malformedProblem { try a.receive(try Self.gossip(from: "B", delta)) } == .outOfRange)
        #expect(Self.malformedProblem { try a.merge(delta) } == .outOfRange)
        #expect(a.value(forKey: "k") == nil)
        try a.setValue(.string("mine"), forKey: "k")
        #expect(a.siblings(forKey: "k").first?.timestamp.wallMilliseconds == Self.start)
        // The clock itself never traps, even at the end of its range.
        var clock = HybridLogicalClock(latest: HybridTimestamp(wallMilliseconds: .max, logical: .max))
        #expect(clock.tick(nowMilliseconds: 5) == HybridTimestamp(wallMilliseconds: .max, logical: .max))
    }

    @Test func aWriteStampedFarAheadIsRefusedUntilTheClockCatchesUp() throws {
        let clock = ManualClock(startMilliseconds: Self.start)
        let a = Self.store("A", clock: clock)
        // B's clock runs three days fast: more than the two days a store tolerates.
        let b = Self.store("B", clock: ManualClock(startMilliseconds: Self.start + 3 * 86_400_000))
        try b.setValue(.string("from the future"), forKey: "k")
        let bytes = try b.gossip(to: "A", wantsReply: false)
        var refusal: MalformedInput?
        do { try a.receive(bytes) } catch { if case .malformed(let input) = error { refusal = input } }
        #expect(refusal?.problem == .clockAhead)
        #expect(refusal?.detail.contains("B:1") == true)
        // Nothing was adopted: A's next write is stamped by its own clock.
        #expect(a.value(forKey: "k") == nil)
        try a.setValue(.string("now"), forKey: "other")
        #expect(a.siblings(forKey: "other").first?.timestamp == HybridTimestamp(wallMilliseconds: Self.start, logical: 0))
        // A store configured to tolerate more takes it, and so does A once its clock catches up.
        clock.advance(byMilliseconds: 86_400_000 + 1)
        try a.receive(bytes)
        #expect(a.value(forKey: "k") == .string("from the future"))
    }

    @Test func oneKeySpelledInTwoUnicodeFormsIsRefusedNotHalfDropped() throws {
        // "é" composed (U+00E9) and decomposed (e + U+0301): distinct bytes, one Swift key.
        let composed = "\u{E9}", decomposed = "e\u{301}"
        let stamp = HybridTimestamp(wallMilliseconds: Self.start, logical: 0)
        let delta = ReplicatedMap.Delta(entries: [:], context: VersionVector(["B": 2]))
        var writer = BinaryWriter()
        delta.context.encode(into: &writer)
        writer.writeVarint(2)
        for (index, key) in [decomposed, composed].enumerated() {  // UTF-8 order: 0x65 < 0xC3
            writer.writeString(key)
            writer.writeVarint(1)
            writer.writeVarint(0)  // replica index of B
            writer.writeVarint(UInt64(index + 1))
            stamp.encode(into: &writer)
            writer.writeByte(1)
            Value.string("value \(index)").encode(into: &writer)
        }
        #expect(Self.malformedProblem { _ = try ReplicatedMap.Delta(encoded: writer.bytes) } == .nonCanonical)
    }

    // MARK: The hub

    static let quota = Quota(maximumKeyCount: 2, maximumTotalValueBytes: 1_000, maximumValueBytes: 100, maximumKeyBytes: 64)

    static func writes(_ replica: ReplicaID, _ keys: [String], after context: VersionVector = VersionVector()) -> ReplicatedMap.Delta {
        var map = ReplicatedMap()
        map.formContextUnion(context)
        for key in keys { map.write(.string(key), forKey: key, replica: replica, timestamp: HybridTimestamp(wallMilliseconds: start, logical: 0)) }
        return map.delta(for: context)
    }

    @Test func aClaimOnTheHubsCounterThenAnOverQuotaPushDoesNotCrashTheHub() throws {
        var hub = HubSyncMachine(quota: Self.quota)
        _ = try hub.receive(SyncPush(account: .default, device: "mallory", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector(["hub": .max]))),
                            nowMilliseconds: Self.start)
        // Three keys against a quota of two: the hub compensates with a write of its own.
        let reply = try hub.receive(SyncPush(account: .default, device: "mallory", delta: Self.writes("mallory", ["a", "b", "c"])),
                                    nowMilliseconds: Self.start)
        #expect(reply.rejectedKeys == ["c"])
        #expect(hub.state(of: .default).siblings(forKey: "c").map(\.dot) == [Dot(replica: "hub", counter: 1)])
        // Another account never saw any of it.
        #expect(hub.state(of: "other").context.isEmpty)
    }

    @Test func aDeviceCannotSuppressWritesItNeverReceived() throws {
        var hub = HubSyncMachine()
        _ = try hub.receive(SyncPush(account: .default, device: "victim", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector())),
                            nowMilliseconds: Self.start)
        // Mallory claims to have seen ten writes of the victim; the victim was offline.
        _ = try hub.receive(SyncPush(account: .default, device: "mallory", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector(["victim": 10]))),
                            nowMilliseconds: Self.start)
        #expect(hub.state(of: .default).context["victim"] == 0)
        // The victim's offline write reaches the hub, and mallory's next exchange brings it.
        _ = try hub.receive(SyncPush(account: .default, device: "victim", delta: Self.writes("victim", ["offline"])), nowMilliseconds: Self.start)
        #expect(hub.state(of: .default).visibleValue(forKey: "offline", policy: .lastWriterWins) == .string("offline"))
        let toMallory = try hub.receive(SyncPush(account: .default, device: "mallory", delta: ReplicatedMap.Delta(entries: [:], context: VersionVector(["victim": 10]))),
                                        nowMilliseconds: Self.start)
        #expect(toMallory.delta.entries["offline"] != nil)
    }

    @Test func theHubBelievesWhatItSentAndWhatAPushCarries() {
        let delta = ReplicatedMap.Delta(entries: ["k": [Sibling(dot: Dot(replica: "c", counter: 7), timestamp: .zero, value: nil)]],
                                        context: VersionVector(["a": 9, "b": 9, "c": 9, "d": 4, "d~2": 3, "hub~5": 2]))
        let believed = HubSyncMachine.believable(delta, from: "d", sent: VersionVector(["a": 3, "b": 20]))
        #expect(believed == VersionVector(["a": 3, "b": 9, "c": 7, "d": 4]))
    }

    /// What the hub believes is, replica by replica, the claim capped by what it sent (the
    /// device's own counters uncapped), raised by the writes the push carries: checked
    /// against that definition on random contexts, both when the hub walks the two vectors
    /// and when it searches `sent` for a claim of few replicas.
    @Test(arguments: [2, 40, 400])
    func theHubBelievesReplicaByReplica(sentReplicas: Int) {
        var random = Xoshiro256StarStar(seed: UInt64(sentReplicas))
        let pool = (0..<sentReplicas).map { ReplicaID("r\($0)")! } + ["device"]
        for round in 0..<100 {
            func vector(_ count: Int) -> VersionVector {
                var vector = VersionVector()
                for _ in 0..<count { vector.raise(pool[random.next(below: pool.count)], to: UInt64(random.next(in: 1...9))) }
                return vector
            }
            let claimed = vector(random.next(in: 0...(round % 2 == 0 ? 3 : sentReplicas))), sent = vector(sentReplicas)
            let writer = pool[random.next(below: pool.count)]
            let carried = Sibling(dot: Dot(replica: writer, counter: UInt64(random.next(in: 1...12))), timestamp: .zero, value: nil)
            let delta = ReplicatedMap.Delta(entries: ["k": [carried]], context: claimed)
            var expected = VersionVector()
            for replica in pool {
                expected.raise(replica, to: replica == "device" ? claimed[replica] : min(claimed[replica], sent[replica]))
            }
            expected.raise(carried.dot.replica, to: carried.dot.counter)
            #expect(HubSyncMachine.believable(delta, from: "device", sent: sent) == expected, "round \(round): claimed \(claimed), sent \(sent)")
        }
    }

    /// A push shows the device learnt from a lost hub exactly when, for some replica that is
    /// not an incarnation of the device, it claims more than the hub sent it of writes the
    /// hub holds: checked against that definition on random contexts, both when the hub
    /// walks the claim beside what it sent and when it searches for a claim of few replicas.
    @Test(arguments: [2, 40, 400])
    func aClaimBeyondWhatWasSentIsFoundReplicaByReplica(sentReplicas: Int) {
        var random = Xoshiro256StarStar(seed: UInt64(sentReplicas) &+ 7)
        let pool = (0..<sentReplicas).map { ReplicaID("r\($0)")! } + ["device", "device~2"]
        var found = 0
        for round in 0..<200 {
            func vector(_ count: Int, upTo highest: Int) -> VersionVector {
                var vector = VersionVector()
                for _ in 0..<count { vector.raise(pool[random.next(below: pool.count)], to: UInt64(random.next(in: 1...highest))) }
                return vector
            }
            // The hub holds what it sent and a few writes more.
            let sent = vector(sentReplicas, upTo: 9), unsent = vector(random.next(in: 0...3), upTo: 12), holding = sent.union(unsent)
            // Within what was sent (all of it, or a few replicas), and now and then some of
            // the writes the hub holds and did not send, or a write the hub does not hold.
            var claimed = VersionVector()
            for (replica, counter) in sent.sortedEntries where random.next(below: 2) == 0 { claimed.raise(replica, to: counter) }
            if round % 2 == 0 { claimed = vector(random.next(in: 0...3), upTo: 9) }
            if random.next(below: 2) == 0 {
                for (replica, counter) in unsent.sortedEntries where random.next(below: 2) == 0 { claimed.raise(replica, to: counter) }
            }
            if random.next(below: 4) == 0 { claimed.raise(pool[random.next(below: pool.count)], to: UInt64(random.next(in: 1...12))) }
            let expected = pool.contains { replica in
                replica.base != "device" && min(claimed[replica], holding[replica]) > sent[replica]
            }
            if expected { found += 1 }
            #expect(HubSyncMachine.knowsMoreThanSent(claimed, device: "device", sent: sent, holding: holding) == expected,
                    "round \(round): claimed \(claimed), sent \(sent), holding \(holding)")
        }
        #expect(found > 10 && found < 190, "\(found) of 200 rounds claim more than was sent: too few of one answer")
    }

    @Test func aDeviceWithTheHubsIDOrAClockFarAheadIsRefusedAndChangesNothing() throws {
        var hub = HubSyncMachine()
        let impostor = SyncPush(account: .default, device: "hub", delta: Self.writes("hub", ["k"]))
        #expect(Self.malformedProblem { _ = try hub.receive(impostor, nowMilliseconds: Self.start) } == .unexpectedMessage)
        var ahead = ReplicatedMap()
        ahead.write(.string("x"), forKey: "k", replica: "fast", timestamp: HybridTimestamp(wallMilliseconds: Self.start + 2 * 86_400_000, logical: 0))
        let push = SyncPush(account: .default, device: "fast", delta: ahead.asDelta)
        #expect(Self.malformedProblem { _ = try hub.receive(push, nowMilliseconds: Self.start) } == .clockAhead)
        #expect(hub.accountIDs.isEmpty)
        var compensations: [HubCompensation] = []
        #expect(Self.malformedProblem { _ = try hub.receive(.push(push), nowMilliseconds: Self.start, compensations: &compensations) } == .clockAhead)
        #expect(Self.malformedProblem {
            _ = try hub.receive(.gossip(SyncGossip(account: .default, sender: "x", delta: ahead.asDelta, wantsReply: false)),
                                nowMilliseconds: Self.start, compensations: &compensations)
        } == .unexpectedMessage)
        // A day later it is within the bound.
        _ = try hub.receive(push, nowMilliseconds: Self.start + 86_400_000)
        #expect(hub.state(of: .default).visibleValue(forKey: "k", policy: .lastWriterWins) == .string("x"))
    }
}

/// Damage is detected: every message and shared-folder file ends with a CRC-32C.
@Suite struct IntegrityTests {
    @Test func everySingleBitFlipOfARealDeltaFileIsRefused() throws {
        // A delta file as the shared folder holds it: what A broadcasts after its snapshot.
        let a = ReplicatedKeyValueStore(replicaID: "A", clock: ManualClock())
        try a.setValue(.string("base"), forKey: "k")
        let snapshot = try #require(a.broadcast(after: nil))
        try a.setValue(.integer(42), forKey: "n")
        let gossip = try #require(a.broadcast(after: snapshot.delta.context))
        let file = try SyncMessage.gossip(gossip).encoded()
        var refused = 0
        for bit in 0..<(file.count * 8) {
            var flipped = file
            flipped[bit / 8] ^= 1 << UInt8(bit % 8)
            if (try? SyncMessage(encoded: flipped)) == nil { refused += 1 }
        }
        #expect(refused == file.count * 8, "\(refused) of \(file.count * 8) flips refused")
        // The damage is named.
        var damaged = file
        damaged[file.count / 2] ^= 0x10
        #expect(HostileInputTests.malformedProblem { _ = try SyncMessage(encoded: damaged) } == .damaged)
    }

    /// The checksum folds eight bytes at a time; checked against the CRC-32C computed bit
    /// by bit from its definition, for every length up to 100 (every remainder of 8), with
    /// the bytes split anywhere between a context and the body, and over a sequence whose
    /// bytes are not contiguous.
    @Test func theChecksumMatchesOneComputedBitByBit() {
        func bitByBit(_ bytes: [UInt8]) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 0 ? 0 : 0x82F6_3B78) }
            }
            return ~crc
        }
        var random = Xoshiro256StarStar(seed: 32)
        for length in 0...100 {
            let bytes = (0..<length).map { _ in UInt8(random.next(below: 256)) }
            let expected = bitByBit(bytes)
            #expect(CRC32C.checksum(bytes) == expected, "\(length) bytes")
            #expect(CRC32C.checksum(bytes.lazy.map { $0 }) == expected, "\(length) bytes, not contiguous")
            let split = random.next(in: 0...length)
            let sealed = CRC32C.sealed(Array(bytes[split...]), context: Array(bytes[..<split]))
            #expect(Array(sealed.suffix(4)) == (0..<4).map { UInt8(truncatingIfNeeded: expected >> (8 * $0)) }, "\(length) bytes split at \(split)")
        }
    }

    /// A string read from a message is refused exactly when the standard library's
    /// validating decoder refuses its bytes: short random byte strings, biased toward the
    /// lead bytes of multi-byte sequences (C0, C1, E0, ED, F0, F4, F5 and others) and
    /// continuation bytes, where ill-formed UTF-8 hides. Replica IDs read from the same
    /// bytes are refused as invalid UTF-8 or as invalid IDs, as reading the text first would.
    @Test func aStringIsReadExactlyWhenItsBytesAreUTF8() {
        var random = Xoshiro256StarStar(seed: 8)
        let tricky: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEE, 0xEF,
                               0xF0, 0xF1, 0xF4, 0xF5, 0xFF]
        var refused = 0
        for round in 0..<20_000 {
            let bytes = (0..<random.next(in: 0...6)).map { _ in
                random.next(below: 4) == 0 ? UInt8(random.next(below: 256)) : tricky[random.next(below: tricky.count)]
            }
            let expected = String(validating: bytes, as: UTF8.self)
            if expected == nil { refused += 1 }
            var writer = BinaryWriter()
            writer.writeBytes(bytes)
            var reader = BinaryReader(writer.bytes)
            let read = try? reader.readString()
            #expect(read == expected, "round \(round): \(bytes)")
            if expected == nil {
                writer = BinaryWriter()
                writer.writeVarint(1)
                writer.writeBytes(bytes)
                writer.writeVarint(1)
                reader = BinaryReader(writer.bytes)
                #expect(HostileInputTests.malformedProblem { _ = try VersionVector(from: &reader) } == .invalidUTF8,
                        "round \(round): \(bytes)")
            }
        }
        #expect(refused > 2_000 && refused < 18_000, "\(refused) of 20,000 refused: too few of one answer")
    }

    @Test func theChecksumIsCRC32C() {
        // The check value of the CRC-32C catalogue (RFC 3720's polynomial).
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        #expect(throws: ConvergeError.self) { try CRC32C.unsealed([1, 2, 3], what: "x") }
        #expect((try? CRC32C.unsealed(CRC32C.sealed([1, 2, 3]), what: "x")) == [1, 2, 3])
        // A context is covered as if it came first, and not written: the check value again.
        #expect(CRC32C.sealed(Array("56789".utf8), context: Array("1234".utf8)) == Array("56789".utf8) + [0x83, 0x92, 0x06, 0xE3])
        #expect((try? CRC32C.unsealed(Array("56789".utf8) + [0x83, 0x92, 0x06, 0xE3], context: Array("1234".utf8), what: "x")) == Array("56789".utf8))
        #expect(throws: ConvergeError.self) { try CRC32C.unsealed(Array("56789".utf8) + [0x83, 0x92, 0x06, 0xE3], context: Array("1235".utf8), what: "x") }
    }
}
