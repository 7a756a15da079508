@_spi(Testing) @testable import Converge
import ConvergeTestSupport
import Synchronization
import Testing

/// Replies written relative to what the polling or pushing device holds (``SyncReply/relativeTo``):
/// what they cost, that they say exactly what a whole reply says, and that a device never
/// joins one with anything but the hub context and frontier it was written against.
@Suite("Relative replies: the answer to a poll or push carries only what changed")
struct RelativeReplyTests {
    /// A hub whose context names `replicas` devices, each of which wrote one key, and two
    /// stores that have taken the hub's whole state: `reader` then acknowledged it, so its
    /// next poll shows the hub what it holds.
    struct Fixture {
        var hub = HubSyncMachine(quota: .unlimited)
        let reader: ReplicatedKeyValueStore
        let writer: ReplicatedKeyValueStore

        init(replicas: Int) throws {
            for index in 0..<replicas {
                let device = ReplicaID("device-\(index)")!
                var state = ReplicatedMap()
                state.write(.integer(Int64(index)), forKey: "key-\(index)", replica: device,
                            timestamp: HybridTimestamp(wallMilliseconds: 1_000 + UInt64(index), logical: 0))
                _ = try hub.receive(SyncPush(account: .default, device: device, delta: state.delta(for: VersionVector())), nowMilliseconds: 5_000)
            }
            reader = try ReplicatedKeyValueStore(replicaID: "reader", storage: InMemoryStorage(), clock: ManualClock(startMilliseconds: 5_000))
            writer = try ReplicatedKeyValueStore(replicaID: "writer", storage: InMemoryStorage(), clock: ManualClock(startMilliseconds: 5_000))
            for store in [reader, writer] {
                // Two exchanges: the whole state, then an acknowledgement answered "up to date"
                // or with the frontier.
                for _ in 0..<3 { _ = try exchange(store) }
            }
        }

        /// One request of `store` answered by the hub and taken by the store; returns the
        /// request and the answer.
        @discardableResult
        mutating func exchange(_ store: ReplicatedKeyValueStore) throws -> (request: SyncMessage, answer: [UInt8], receipt: SyncReceipt) {
            let request = try SyncMessage(encoded: try store.hubRequest().bytes)
            let answer = try answer(request)
            return (request, answer, try store.receive(answer))
        }

        mutating func answer(_ request: SyncMessage) throws -> [UInt8] {
            var compensations: [HubCompensation] = []
            return try hub.receive(request, nowMilliseconds: 5_000, compensations: &compensations).encoded()
        }
    }

    /// The benchmark's case (`hub.reply.bytes`), with fewer replicas: one key another device
    /// wrote reaches a device that holds the hub's context, in a reply that says what a whole
    /// one says, in bytes that do not grow with the replicas.
    @Test func aPollIsAnsweredWithWhatChangedAndTheDeviceEndsAsAWholeReplyLeavesIt() throws {
        for replicas in [2, 100] {
            var fixture = try Fixture(replicas: replicas)
            try fixture.writer.setValue("a new value", forKey: "changed")
            try fixture.exchange(fixture.writer)
            let request = try SyncMessage(encoded: try fixture.reader.hubRequest().bytes)
            guard case .poll(let poll) = request else { Issue.record("the reader should poll, not \(request)"); return }
            #expect(poll.acceptsRelativeReply)
            // The same hub answering a poll of a device that does not accept a relative reply
            // (one built before them): the whole reply, the oracle.
            var wholeHub = fixture.hub
            var compensations: [HubCompensation] = []
            var old = poll
            old.acceptsRelativeReply = false
            guard case .reply(let whole) = try wholeHub.receive(.poll(old), nowMilliseconds: 5_000, compensations: &compensations) else {
                Issue.record("the whole answer is not a reply"); return
            }
            #expect(whole.relativeTo == nil && whole.delta.context.count == replicas + 1)
            let bytes = try fixture.answer(request)
            guard case .reply(let relative) = try SyncMessage(encoded: bytes) else { Issue.record("the answer is not a reply"); return }
            #expect(bytes[1] == 6 && relative.relativeTo != nil)
            // Only the writer's entry (the replica of the one write carried) changed.
            #expect(relative.delta.context == VersionVector(["writer": 1]) && relative.stableFrontier.count <= 1)
            #expect(relative.resolved(againstContext: fixture.reader.hubMachineForTesting.hubContext,
                                      stableFrontier: fixture.reader.hubMachineForTesting.stableFrontier) == whole)
            let wholeBytes = try SyncMessage.reply(whole).encoded().count
            print("\(replicas) replicas: a one-key reply is \(bytes.count) bytes relative, \(wholeBytes) whole")
            #expect(bytes.count <= 100 + "changed".utf8.count + Value.string("a new value").encodedSize)
            let receipt = try fixture.reader.receive(bytes)
            #expect(receipt.ignored == nil && fixture.reader.string(forKey: "changed") == "a new value")
            #expect(fixture.reader.replicatedState.context == fixture.hub.state(of: .default).context)
            #expect(fixture.reader.hubMachineForTesting.hubContext == fixture.hub.state(of: .default).context)
            // And the exchange after it is "up to date": the hub and the device agree on what
            // the device holds.
            let next = try SyncMessage(encoded: try fixture.answer(try SyncMessage(encoded: try fixture.reader.hubRequest().bytes)))
            #expect(next == .upToDate(.default))
        }
    }

    /// A push, too, takes a reply relative to what the device holds: the hub's answer to a
    /// device that pushes one key while another device wrote one says what a whole answer
    /// says (the same hub, copied, answering the same push without the digest), in bytes
    /// that do not grow with the replicas; the same answer delivered twice is ignored the
    /// second time.
    @Test func aPushIsAnsweredWithWhatChangedAndTheDeviceEndsAsAWholeReplyLeavesIt() throws {
        for replicas in [2, 100] {
            var fixture = try Fixture(replicas: replicas)
            try fixture.writer.setValue("a new value", forKey: "changed")
            try fixture.exchange(fixture.writer)
            try fixture.reader.setValue("mine", forKey: "pushed")
            let request = try SyncMessage(encoded: try fixture.reader.hubRequest().bytes)
            guard case .push(let push) = request else { Issue.record("the reader should push, not \(request)"); return }
            let held = fixture.reader.hubMachineForTesting
            #expect(push.relativeReplyDigest == SyncPoll.digest(context: held.hubContext, stableFrontier: held.stableFrontier))
            var wholeHub = fixture.hub
            var compensations: [HubCompensation] = []
            var old = push
            old.relativeReplyDigest = nil
            guard case .reply(let whole) = try wholeHub.receive(.push(old), nowMilliseconds: 5_000, compensations: &compensations) else {
                Issue.record("the whole answer is not a reply"); return
            }
            #expect(whole.relativeTo == nil && whole.delta.context.count == replicas + 2)
            let bytes = try fixture.answer(request)
            guard case .reply(let relative) = try SyncMessage(encoded: bytes) else { Issue.record("the answer is not a reply"); return }
            #expect(bytes[1] == 6 && relative.relativeTo == push.relativeReplyDigest)
            // The writer's entry (its write is carried) and the reader's (its push raised it).
            #expect(relative.delta.context == VersionVector(["writer": 1, "reader": 1]))
            #expect(relative.resolved(againstContext: held.hubContext, stableFrontier: held.stableFrontier) == whole)
            #expect(wholeHub.state(of: .default) == fixture.hub.state(of: .default))
            let wholeBytes = try SyncMessage.reply(whole).encoded().count
            print("\(replicas) replicas: the answer to a one-key push is \(bytes.count) bytes relative, \(wholeBytes) whole")
            #expect(bytes.count <= 100 + "changed".utf8.count + Value.string("a new value").encodedSize)
            #expect(try fixture.reader.receive(bytes).ignored == nil && fixture.reader.string(forKey: "changed") == "a new value")
            #expect(fixture.reader.replicatedState.context == fixture.hub.state(of: .default).context)
            #expect(fixture.reader.hubMachineForTesting.hubContext == fixture.hub.state(of: .default).context)
            // Delivered again, it is relative to what the reader held before it: ignored.
            #expect(try fixture.reader.receive(bytes).ignored == .staleRelativeReply)
            #expect(fixture.reader.replicatedState.entries == fixture.hub.state(of: .default).entries)
            let next = try SyncMessage(encoded: try fixture.answer(try SyncMessage(encoded: try fixture.reader.hubRequest().bytes)))
            #expect(next == .upToDate(.default))
        }
    }

    /// A push whose digest is not that of what the hub last sent the device (the device
    /// missed a reply) is answered whole.
    @Test func aPushFromADeviceThatMissedAReplyIsAnsweredWhole() throws {
        var fixture = try Fixture(replicas: 3)
        try fixture.reader.setValue("one", forKey: "r1")
        // The answer to this push is lost.
        _ = try fixture.answer(try SyncMessage(encoded: try fixture.reader.hubRequest().bytes))
        try fixture.reader.setValue("two", forKey: "r2")
        let (request, bytes, receipt) = try fixture.exchange(fixture.reader)
        guard case .push(let push) = request, case .reply(let reply) = try SyncMessage(encoded: bytes) else {
            Issue.record("expected a push answered by a reply"); return
        }
        #expect(push.relativeReplyDigest != nil && reply.relativeTo == nil && bytes[1] == 4)
        #expect(receipt.ignored == nil && fixture.reader.replicatedState.context == fixture.hub.state(of: .default).context)
    }

    /// A relative reply that arrives after the device took another reply (a duplicate, or a
    /// reply to a later request that overtook it) is ignored; nothing is lost, and a store
    /// that joins it with what it holds by then loses a write for good.
    @Test func aRelativeReplyToWhatTheDeviceNoLongerHoldsIsIgnored() throws {
        var fixture = try Fixture(replicas: 3)
        try fixture.writer.setValue("first", forKey: "k")
        try fixture.exchange(fixture.writer)
        let poll = try SyncMessage(encoded: try fixture.reader.hubRequest().bytes)
        let relative = try fixture.answer(poll)
        // Before it arrives, the writer writes k again, and the reader pushes a write of its
        // own: the answer carries the writer's second value of k.
        try fixture.writer.setValue("second", forKey: "k")
        try fixture.exchange(fixture.writer)
        try fixture.reader.setValue("mine", forKey: "r")
        let (push, _, receipt) = try fixture.exchange(fixture.reader)
        guard case .push = push else { Issue.record("the reader should push, not \(push)"); return }
        #expect(receipt.ignored == nil && fixture.reader.string(forKey: "k") == "second")
        // The first answer, late: relative to what the reader held before the push's answer.
        guard case .reply(let late) = try SyncMessage(encoded: relative) else { Issue.record("not a reply"); return }
        #expect(late.relativeTo != nil)
        #expect(try fixture.reader.receive(relative).ignored == .staleRelativeReply)
        #expect(fixture.reader.string(forKey: "k") == "second" && fixture.reader.siblings(forKey: "k").count == 1)
        // A store that joins it with what it holds now claims the hub's later context for the
        // reply's keys, and drops the second value of k, which it then never fetches again.
        var broken = try Fixture(replicas: 3)
        broken.reader._resolvesRelativeRepliesBlindly = true
        try broken.writer.setValue("first", forKey: "k")
        try broken.exchange(broken.writer)
        let brokenRelative = try broken.answer(try SyncMessage(encoded: try broken.reader.hubRequest().bytes))
        try broken.writer.setValue("second", forKey: "k")
        try broken.exchange(broken.writer)
        try broken.reader.setValue("mine", forKey: "r")
        try broken.exchange(broken.reader)
        #expect(try broken.reader.receive(brokenRelative).ignored == nil)
        #expect(broken.reader.string(forKey: "k") == nil)
        for _ in 0..<3 { try broken.exchange(broken.reader) }
        #expect(broken.reader.string(forKey: "k") == nil, "the broken store should have lost k for good")
        // The working one holds what the hub last sent it (the push's answer): its next poll
        // is answered "up to date", and it holds what the hub holds.
        let next = try SyncMessage(encoded: try fixture.reader.hubRequest().bytes)
        guard case .poll = next else { Issue.record("the reader should poll, not \(next)"); return }
        #expect(try SyncMessage(encoded: try fixture.answer(next)) == .upToDate(.default))
        #expect(fixture.reader.replicatedState.context == fixture.hub.state(of: .default).context)
        #expect(fixture.reader.replicatedState.entries == fixture.hub.state(of: .default).entries)
    }

    /// A poll that accepts a relative reply, and a relative reply, are written in version 6;
    /// labelled with an older version, or carrying what version 6 does not define, they are
    /// refused, as is a relative page (only a whole delta is written relative).
    @Test func relativeRepliesAndThePollsThatAcceptThemAreVersion6AndCanonical() throws {
        let poll = SyncMessage.poll(SyncPoll(account: "a", device: "phone", digest: 42, acceptsRelativeReply: true))
        let pollBytes = try poll.encoded()
        #expect(try pollBytes[1] == 6 && poll.writtenFormatVersion == 6 && (try SyncMessage(encoded: pollBytes)) == poll)
        #expect(try SyncMessage.poll(SyncPoll(account: "a", device: "phone", digest: 42)).encoded()[1] == 4)
        // Labelled 5, its flags byte is one byte too many.
        #expect(throws: ConvergeError.self) { try SyncMessage(encoded: SyncMessageTests.resealed(pollBytes, asVersion: 5)) }
        // Version 6 writes a poll without the flag in version 4: a flags byte of 0 is not
        // canonical, and 2 is no flag.
        for (flags, problem) in [(UInt8(0), MalformedInput.Problem.nonCanonical), (2, .unknownTag)] {
            var body = Array(pollBytes.dropLast(4))
            body[body.count - 1] = flags
            #expect(throws: ConvergeError.malformed(MalformedInput(problem: problem, detail: "invalid poll flags \(flags)", offset: body.count - 1))) {
                try SyncMessage(encoded: CRC32C.sealed(body))
            }
        }
        let context = VersionVector(["phone": 2, "tablet": 5])
        var state = ReplicatedMap()
        state.write("v", forKey: "k", replica: "tablet", timestamp: HybridTimestamp(wallMilliseconds: 9, logical: 0))
        let delta = ReplicatedMap.Delta(entries: state.entries, context: VersionVector(["phone": 2, "tablet": 1]))
        let whole = SyncReply(account: "a", kind: .delta, delta: delta, stableFrontier: VersionVector(["phone": 1]), rejectedKeys: [])
        let relative = try #require(whole.relative(toContext: VersionVector(["phone": 2]), stableFrontier: VersionVector(["phone": 1])))
        #expect(relative.delta.context == VersionVector(["tablet": 1]) && relative.stableFrontier.isEmpty)
        let replyBytes = try SyncMessage.reply(relative).encoded()
        #expect(try replyBytes[1] == 6 && (try SyncMessage(encoded: replyBytes)) == .reply(relative))
        #expect(throws: ConvergeError.self) { try SyncMessage(encoded: SyncMessageTests.resealed(replyBytes, asVersion: 5)) }
        // A push that takes a relative reply: version 6, flag 64 and the digest; labelled 5
        // (which has no flag 64) refused, and version 6 without the flag is not canonical.
        var push = SyncPush(account: "a", device: "phone", delta: ReplicatedMap.Delta(entries: [:], context: context),
                            basis: VersionVector(["phone": 2]))
        let plainPushBytes = try SyncMessage.push(push).encoded()
        #expect(plainPushBytes[1] == 4)
        push.relativeReplyDigest = 0x0123_4567_89AB_CDEF
        let pushBytes = try SyncMessage.push(push).encoded()
        #expect(try pushBytes[1] == 6 && (try SyncMessage(encoded: pushBytes)) == .push(push))
        #expect(pushBytes.count == plainPushBytes.count + 8)
        #expect(throws: ConvergeError.self) { try SyncMessage(encoded: SyncMessageTests.resealed(pushBytes, asVersion: 5)) }
        #expect(throws: ConvergeError.malformed(MalformedInput(problem: .nonCanonical,
                                                               detail: "a push that takes no relative reply is written in format version 4, not 6", offset: 1))) {
            try SyncMessage(encoded: SyncMessageTests.resealed(plainPushBytes, asVersion: 6))
        }
        // Nor one that names keys the hub superseded to keep the quota: said only in the answer
        // to the push that broke it, they would be lost with a stale reply the device ignores.
        var rejecting = whole
        rejecting.rejectedKeys = ["k"]
        #expect(rejecting.relative(toContext: VersionVector(["phone": 2]), stableFrontier: VersionVector(["phone": 1])) == nil)
        // Not relative to a context above the reply's, nor a page, nor a full state.
        #expect(whole.relative(toContext: context, stableFrontier: VersionVector()) == nil)
        var page = whole
        page.moreToCome = true
        #expect(page.relative(toContext: VersionVector(), stableFrontier: VersionVector()) == nil)
        page.relativeTo = 7
        #expect(throws: ConvergeError.malformed(MalformedInput(problem: .inconsistent,
                                                               detail: "only a whole delta reply is written relative to what the device holds", offset: 5))) {
            try SyncMessage(encoded: try SyncMessage.reply(page).encoded())
        }
        // Resolved only against exactly the context and frontier it names.
        #expect(relative.resolved(againstContext: VersionVector(["phone": 2]), stableFrontier: VersionVector(["phone": 1])) == whole)
        #expect(relative.resolved(againstContext: VersionVector(["phone": 3]), stableFrontier: VersionVector(["phone": 1])) == nil)
        #expect(relative.resolved(againstContext: VersionVector(["phone": 2]), stableFrontier: VersionVector()) == nil)
    }
}

/// A hub built before message format 6: it refuses every message of a later version, as
/// `converge-hub` answers `400` to what it cannot decode.
final class HubBeforeFormat6: SyncTransport {
    let hub: InMemoryHub
    /// The formats of the requests it was sent, in order.
    let versions = Mutex<[UInt8]>([])

    init(hub: InMemoryHub) { self.hub = hub }

    func exchange(_ request: [UInt8]) async throws -> [UInt8] { try exchangeImmediately(request)! }

    func exchangeImmediately(_ request: [UInt8]) throws -> [UInt8]? {
        versions.withLock { $0.append(request[1]) }
        guard request[1] < 6 else {
            throw ConvergeError.malformed(MalformedInput(problem: .unsupportedVersion, detail: "unsupported message format version \(request[1])", offset: 1))
        }
        return try hub.exchange(request)
    }
}

extension RelativeReplyTests {
    /// A device upgraded before its hub: its poll or push, which accepts a relative reply
    /// (format 6), is refused, and the store sends it again at once in format 4; its later
    /// requests are of format 4 (a device whose polls all failed would never hear of others'
    /// writes).
    @Test func aDeviceWhoseHubRefusesFormat6RequestsSendsThemAgainInFormat4() throws {
        let clock = ManualClock()
        let hub = InMemoryHub(quota: .unlimited)
        let phoneLink = HubBeforeFormat6(hub: hub), tabletLink = HubBeforeFormat6(hub: hub)
        let phone = ReplicatedKeyValueStore(replicaID: "phone", transport: phoneLink, clock: clock)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", transport: tabletLink, clock: clock)
        try tablet.setValue("one", forKey: "k")
        #expect(tablet.synchronize() && phone.synchronize())
        #expect(phone.string(forKey: "k") == "one")
        for value in ["two", "three", "four"] {
            try tablet.setValue(.string(value), forKey: "k")
            #expect(tablet.synchronize())
            // Nothing to push: a poll.
            #expect(phone.synchronize())
            #expect(phone.string(forKey: "k") == value)
        }
        let versions = phoneLink.versions.withLock { $0 }
        #expect(versions == [4, 6, 4, 4, 4], "formats sent: \(versions)")
        // The tablet pushes: its first push (nothing heard from the hub) takes no relative
        // reply; its second does, is refused, and goes again in format 4, as do the next.
        let pushes = tabletLink.versions.withLock { $0 }
        #expect(pushes == [4, 6, 4, 4, 4], "formats sent: \(pushes)")
        #expect(tablet.replicatedState == phone.replicatedState)
    }

    /// A network that loses polls is not a hub that refuses them: the store does not send
    /// them again at once, and goes on with polls that accept a relative reply.
    @Test func aNetworkThatLosesPollsDoesNotTurnRelativeRepliesOff() throws {
        let clock = ManualClock()
        let link = LosingLink(hub: InMemoryHub(quota: .unlimited))
        let phone = ReplicatedKeyValueStore(replicaID: "phone", transport: link, clock: clock)
        try phone.setValue("mine", forKey: "m")
        #expect(phone.synchronize())
        link.losses.withLock { $0 = 2 }
        #expect(!phone.synchronize() && !phone.synchronize())
        #expect(phone.synchronize())
        #expect(link.versions.withLock { $0 } == [4, 6, 6, 6], "formats sent: \(link.versions.withLock { $0 })")
    }
}

extension RelativeReplyTests {
    /// A refusal that is not about the format (a wrong token, a push stamped too far ahead)
    /// is thrown as it is: the request is not sent a second time in format 4.
    @Test func aRefusalThatIsNotAboutTheFormatIsNotSentAgain() throws {
        struct TokenRefused: SyncTransportFailure {
            var isTransient: Bool { false }
            var refusedTheMessage: Bool { false }
        }
        for refusal in [TokenRefused() as any Error,
                        ConvergeError.malformed(MalformedInput(problem: .outOfRange, detail: "a write stamped too far ahead", offset: 0))] {
            let link = RefusingLink(hub: InMemoryHub(quota: .unlimited))
            let phone = ReplicatedKeyValueStore(replicaID: "phone", transport: link, clock: ManualClock())
            try phone.setValue("one", forKey: "k")
            #expect(phone.synchronize())
            link.refusal.withLock { $0 = refusal }
            try phone.setValue("two", forKey: "k")
            #expect(!phone.synchronize())
            #expect(link.versions.withLock { $0 } == [4, 6], "formats sent: \(link.versions.withLock { $0 })")
            // Refused as a message (a hub before format 6): sent again in format 4, and format 4
            // from then on, even when that one is refused too.
            link.refusal.withLock { $0 = ConvergeError.malformed(MalformedInput(problem: .unknownTag, detail: "invalid push flags", offset: 0)) }
            #expect(!phone.synchronize())
            #expect(!phone.synchronize())
            #expect(link.versions.withLock { $0 } == [4, 6, 6, 4, 4], "formats sent: \(link.versions.withLock { $0 })")
        }
    }
}

/// A link to a hub of this version that refuses every request with `refusal` once it is set.
final class RefusingLink: SyncTransport {
    let hub: InMemoryHub
    let refusal = Mutex<(any Error)?>(nil)
    /// The formats of the requests it was given, in order.
    let versions = Mutex<[UInt8]>([])

    init(hub: InMemoryHub) { self.hub = hub }

    func exchange(_ request: [UInt8]) async throws -> [UInt8] { try exchangeImmediately(request)! }

    func exchangeImmediately(_ request: [UInt8]) throws -> [UInt8]? {
        versions.withLock { $0.append(request[1]) }
        if let refusal = refusal.withLock({ $0 }) { throw refusal }
        return try hub.exchange(request)
    }
}

/// A link to a hub of this version that loses the next `losses` requests.
final class LosingLink: SyncTransport {
    let hub: InMemoryHub
    let losses = Mutex(0)
    /// The formats of the requests it was given, in order.
    let versions = Mutex<[UInt8]>([])

    init(hub: InMemoryHub) { self.hub = hub }

    func exchange(_ request: [UInt8]) async throws -> [UInt8] { try exchangeImmediately(request)! }

    func exchangeImmediately(_ request: [UInt8]) throws -> [UInt8]? {
        versions.withLock { $0.append(request[1]) }
        let lost = losses.withLock { losses in
            defer { losses = max(0, losses - 1) }
            return losses > 0
        }
        if lost { throw ConvergeError.unreachable("the request was lost") }
        return try hub.exchange(request)
    }
}

extension ReplicatedKeyValueStore {
    /// The store's hub sync machine, as it is now.
    var hubMachineForTesting: DeviceSyncMachine { state.withLock { $0.hubMachine } }
}
