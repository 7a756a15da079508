@_spi(Testing) @testable import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Testing

/// Deltas and full states too large for one message travel in pages: each page is a valid
/// change on its own, the receiver never claims a write it has not received, and the pages
/// in turn give what one message would have.
enum PagingProperties {
    static let defaultCases = 1_000

    /// A receiver that never knew any of the sender's writes takes pages of the sender's
    /// delta until one is complete. After each page, every write of the sender its context
    /// covers must be one it holds (the oracle asks only "covered?" and "held?", never the
    /// join); at the end it must hold what one whole delta gives. `claimsWholeContext`
    /// breaks the pages: each claims the sender's whole context.
    static func pagesNeverClaimAWriteNotReceived(cases: Int = defaultCases, claimsWholeContext: Bool = false) -> PropertyFailure? {
        checkProperty("pagesNeverClaimAWriteNotReceived", cases: cases,
                      generate: { ($0.next(below: 200) + 60, History.generate(using: &$0, replicas: 2...3)) },
                      shrink: { input in input.1.shrunk().map { (input.0, $0) } },
                      describe: { "maximumBytes \($0.0), \($0.1)" }) { input in
            let (maximumBytes, history) = input
            let sender = HistoryRun(history).replicas[0]
            var received = ReplicatedMap()
            var pages = 0
            while true {
                var (page, complete, partialKeys) = sender.delta(for: received.context, maximumBytes: maximumBytes)
                if claimsWholeContext { page.context = sender.context }
                pages += 1
                let bytes = page.encoded().count
                if !complete && bytes > maximumBytes && page.entries.count > 1 {
                    return "page \(pages) of \(page.entries.count) keys takes \(bytes) bytes, more than \(maximumBytes)"
                }
                received.apply(page, partialKeys: Set(partialKeys))
                for (key, siblings) in sender.entries {
                    for sibling in siblings where received.context.contains(sibling.dot) && !received.siblings(forKey: key).contains(sibling) {
                        return "after page \(pages), the receiver's context \(received.context) covers \(sibling.dot) of \(key), which it does not hold"
                    }
                }
                if complete { break }
                if pages > 10_000 { return "no end after \(pages) pages" }
            }
            return received == sender ? nil : "after \(pages) pages the receiver holds \(received.entries), not the sender's \(sender.entries)"
        }
    }

    /// A receiver with writes of its own takes pages of another replica's delta. A page
    /// drops a sibling of the receiver only where the whole delta would have: after each
    /// page, every key either kept all the siblings it had, or holds what joining the whole
    /// state gives it. (A partial key, whose superseding write lies beyond the page, keeps
    /// the receiver's write until that write arrives.) At the end, the receiver holds the
    /// join. `dropsOnPartialKeys` breaks it: partial keys are joined like the others.
    static func pagesDropOnlyWhatTheWholeDeltaDrops(cases: Int = defaultCases, dropsOnPartialKeys: Bool = false) -> PropertyFailure? {
        checkProperty("pagesDropOnlyWhatTheWholeDeltaDrops", cases: cases,
                      generate: { ($0.next(below: 120) + 40, History.generate(using: &$0, replicas: 3...4, maximumOperations: 80)) },
                      shrink: { input in input.1.shrunk().map { (input.0, $0) } },
                      describe: { "maximumBytes \($0.0), \($0.1)" }) { input in
            let (maximumBytes, history) = input
            let run = HistoryRun(history)
            let (sender, receiver) = (run.replicas[0], run.replicas[1])
            var whole = receiver
            whole.join(sender)
            var received = receiver
            var pages = 0
            while pages < 10_000 {
                let (page, complete, partialKeys) = sender.delta(for: received.context, maximumBytes: maximumBytes)
                pages += 1
                let before = received
                received.apply(page, partialKeys: dropsOnPartialKeys ? [] : Set(partialKeys))
                for key in before.entries.keys.sorted() {
                    let kept = before.siblings(forKey: key).allSatisfy(received.siblings(forKey: key).contains)
                    if !kept && received.siblings(forKey: key) != whole.siblings(forKey: key) {
                        return "page \(pages) left \(key) with \(received.siblings(forKey: key).map(\.dot)), dropping some of \(before.siblings(forKey: key).map(\.dot)); the join holds \(whole.siblings(forKey: key).map(\.dot))"
                    }
                }
                if complete { break }
            }
            return received == whole ? nil : "after \(pages) pages the receiver holds \(received.entries), not the join \(whole.entries)"
        }
    }

    /// A returning device that holds tombstones the hub collected joins the hub's full
    /// state in pages, then the deltas that follow: it ends where joining the whole full
    /// state leaves it.
    static func fullStatePagesEndWhereTheWholeFullStateDoes(cases: Int = defaultCases) -> PropertyFailure? {
        checkProperty("fullStatePagesEndWhereTheWholeFullStateDoes", cases: cases,
                      generate: { ($0.next(below: 200) + 60, History.generate(using: &$0, replicas: 2...3)) },
                      shrink: { input in input.1.shrunk().map { (input.0, $0) } },
                      describe: { "maximumBytes \($0.0), \($0.1)" }) { input in
            let (maximumBytes, history) = input
            let run = HistoryRun(history)
            var hub = run.replicas[0]
            let device = run.replicas[1]
            // Every tombstone of the hub is stable for this check: the device may hold some
            // of them, or writes they superseded.
            hub.join(device)
            hub.collectTombstones(stableFrontier: hub.context)
            var whole = device
            whole.join(hub)
            var paged = device
            var after: String?
            var pages = 0
            repeat {
                let (page, keys) = hub.fullStatePage(after: after, within: paged.context, maximumBytes: maximumBytes)
                pages += 1
                guard page.entries.keys.allSatisfy(keys.contains) else { return "page \(pages) holds keys outside \(keys)" }
                paged.join(try! ReplicatedMap(entries: page.entries, context: page.context), keys: keys)
                guard let through = keys.through else { break }
                after = through
            } while pages < 10_000
            while true {
                let (page, complete, partialKeys) = hub.delta(for: paged.context, maximumBytes: maximumBytes)
                paged.apply(page, partialKeys: Set(partialKeys))
                if complete { break }
            }
            return paged == whole ? nil : "after \(pages) full-state pages and the deltas, the device holds \(paged.entries); the whole full state gives \(whole.entries)"
        }
    }
}

@Suite("Paging: state larger than one message travels in several")
struct PagingTests {
    @Test func pagesNeverClaimAWriteNotReceived() {
        expectHolds(PagingProperties.pagesNeverClaimAWriteNotReceived())
    }

    @Test func theOracleCatchesPagesThatClaimTheWholeContext() {
        let failure = PagingProperties.pagesNeverClaimAWriteNotReceived(cases: 300, claimsWholeContext: true)
        expectCaught(failure)
        #expect(failure?.message.contains("which it does not hold") == true, "\(failure?.message ?? "")")
    }

    @Test func pagesDropOnlyWhatTheWholeDeltaDrops() {
        expectHolds(PagingProperties.pagesDropOnlyWhatTheWholeDeltaDrops())
    }

    @Test func theOracleCatchesPagesThatDropOnPartialKeys() {
        let failure = PagingProperties.pagesDropOnlyWhatTheWholeDeltaDrops(cases: 500, dropsOnPartialKeys: true)
        expectCaught(failure)
        #expect(failure?.message.contains("dropping some of") == true, "\(failure?.message ?? "")")
    }

    @Test func fullStatePagesEndWhereTheWholeFullStateDoes() {
        expectHolds(PagingProperties.fullStatePagesEndWhereTheWholeFullStateDoes())
    }

    @Test func aKeySpanHoldsTheKeysBetweenItsBoundsInByteOrder() {
        let span = KeySpan(after: "b", through: "d")
        #expect(!span.contains("b") && span.contains("c") && span.contains("d") && !span.contains("da") && !span.contains("a"))
        #expect(KeySpan.all.contains("anything") && !KeySpan.all.isEmpty)
        #expect(KeySpan(after: "d", through: "b").isEmpty && KeySpan(after: "d", through: "d").isEmpty)
        // Byte order, not Swift's String order: "é" (0xC3 0xA9) sorts after "z".
        #expect(KeySpan(after: "z", through: nil).contains("é"))
    }

    /// The issue's case: a hub holding more than one message may carry (a custom quota)
    /// answers a new device in pages of at most 16 MiB, and the device ends with all of it.
    @Test func aHubStateLargerThanOneMessageReachesANewDeviceInPages() throws {
        let megabyte = String(repeating: "x", count: 1 << 20)
        var hub = HubSyncMachine(quota: .unlimited)
        let writer = ReplicatedKeyValueStore(replicaID: "writer", quota: .unlimited, clock: ManualClock(startMilliseconds: 1_000))
        for index in 0..<18 { try writer.setValue(.string(megabyte + "\(index)"), forKey: "k\(index)") }
        // The writer's own pushes are paged too: 18 MiB do not fit in one request.
        var requests = 0
        while requests < 10 {
            let request = try SyncMessage(encoded: try writer.hubRequest().bytes)
            requests += 1
            var compensations: [HubCompensation] = []
            let answer = try hub.receive(request, nowMilliseconds: 1_000, compensations: &compensations)
            try writer.receive(try answer.encoded())
            if hub.state(of: .default).context == writer.replicatedState.context { break }
        }
        #expect(requests >= 2)
        #expect(hub.state(of: .default) == writer.replicatedState)
        let reader = ReplicatedKeyValueStore(replicaID: "reader", quota: .unlimited, clock: ManualClock(startMilliseconds: 1_000))
        var replies: [Int] = []
        for _ in 0..<10 {
            var compensations: [HubCompensation] = []
            let answer = try hub.receive(try SyncMessage(encoded: try reader.hubRequest().bytes), nowMilliseconds: 1_000,
                                         compensations: &compensations)
            let bytes = try answer.encoded()
            replies.append(bytes.count)
            try reader.receive(bytes)
            if reader.replicatedState == hub.state(of: .default) { break }
        }
        #expect(replies.count >= 2, "\(replies)")
        #expect(replies.allSatisfy { $0 <= SyncMessage.maximumEncodedBytes })
        #expect(reader.replicatedState == hub.state(of: .default))
        #expect(reader.string(forKey: "k17") == megabyte + "17")
    }

    /// Carries out what a device's machine returns for a hub's answer, on `state`.
    static func apply(_ actions: [SyncAction], to state: inout ReplicatedMap) {
        for action in actions {
            switch action {
            case .applyDelta(let delta): _ = state.apply(delta)
            case .applyPage(let delta, let partialKeys): _ = state.apply(delta, partialKeys: Set(partialKeys))
            case .joinFullState(let delta, let keys): _ = state.join(try! ReplicatedMap(entries: delta.entries, context: delta.context), keys: keys)
            case .collectTombstones(let frontier): _ = state.collectTombstones(stableFrontier: frontier)
            case .reportRejectedKeys, .answer, .ignore, .withdraw, .adopt: break
            }
        }
    }

    /// One exchange of a device with the hub: the request (at most `maximumPushBytes`), and
    /// the device's state after the answer.
    static func exchange(_ machine: inout DeviceSyncMachine, _ state: inout ReplicatedMap, with hub: inout HubSyncMachine,
                         maximumPushBytes: Int) throws -> (request: SyncMessage, bytes: Int) {
        let request = machine.request(from: state, maximumPushBytes: maximumPushBytes)
        let bytes = try request.encoded().count
        var compensations: [HubCompensation] = []
        let answer = try hub.receive(SyncMessage(encoded: request.encoded()), nowMilliseconds: 1_000, compensations: &compensations)
        apply(machine.receive(try SyncMessage(encoded: try answer.encoded())), to: &state)
        return (request, bytes)
    }

    /// A device's changes larger than its push limit go in pages, each within the limit. A
    /// page is the device's state under a prefix of its writes: a write the device has since
    /// replaced by one beyond the page (here the first value of "k", removed last) is not in
    /// it, though the page's context covers it, so the hub and every device it answers
    /// briefly lack it; they never lack a write the device still holds, and the next page
    /// brings the removal. (The simulator's reference model excuses exactly that gap, for
    /// whoever learns from the page's receiver too.)
    @Test func aDevicesChangesGoInPagesWithinItsPushLimitAndLoseNoWrite() throws {
        let limit = 160
        var hub = HubSyncMachine()
        var (phone, tablet) = (DeviceSyncMachine(device: "phone"), DeviceSyncMachine(device: "tablet"))
        var (phoneState, tabletState) = (ReplicatedMap(), ReplicatedMap())
        var wall: UInt64 = 1
        func write(_ value: Value?, _ key: String, on state: inout ReplicatedMap, by replica: ReplicaID) {
            wall += 1
            _ = state.write(value, forKey: key, replica: replica, timestamp: HybridTimestamp(wallMilliseconds: wall, logical: 0))
        }
        // Both devices have synced once: the hub's context is not empty, so no repair follows.
        write(.string("tablet's"), "t", on: &tabletState, by: "tablet")
        for _ in 0..<2 {
            _ = try Self.exchange(&tablet, &tabletState, with: &hub, maximumPushBytes: limit)
            _ = try Self.exchange(&phone, &phoneState, with: &hub, maximumPushBytes: limit)
        }
        write(.string("first value of k"), "k", on: &phoneState, by: "phone")
        let replaced = Dot(replica: "phone", counter: 1)
        for index in 0..<8 { write(.string("value number \(index) of this key"), "key\(index)", on: &phoneState, by: "phone") }
        write(nil, "k", on: &phoneState, by: "phone")
        var pages = 0, sawReplacedLeftOut = false
        for _ in 0..<20 {
            let (request, bytes) = try Self.exchange(&phone, &phoneState, with: &hub, maximumPushBytes: limit)
            #expect(bytes <= limit, "a request of \(bytes) bytes, over the push limit of \(limit)")
            guard case .push(let push) = request else { break }
            if push.moreToCome { pages += 1 }
            let hubState = hub.state(of: .default)
            // Whatever the hub's context claims of the phone and does not hold, the phone no
            // longer holds either.
            for (key, siblings) in phoneState.entries {
                for sibling in siblings where hubState.context.contains(sibling.dot) {
                    #expect(hubState.siblings(forKey: key).contains(sibling), "the hub claims \(sibling.dot) of \(key) and lacks it")
                }
            }
            if hubState.context.contains(replaced) && !hubState.siblings(forKey: "k").contains(where: { $0.dot == replaced })
                && !hubState.context.contains(Dot(replica: "phone", counter: phoneState.context["phone"])) {
                sawReplacedLeftOut = true
            }
            // The tablet learns from the hub between the phone's pages.
            _ = try Self.exchange(&tablet, &tabletState, with: &hub, maximumPushBytes: limit)
        }
        #expect(pages >= 2, "the phone's changes took \(pages) pages")
        #expect(sawReplacedLeftOut, "a page left out the replaced value of k while claiming it")
        // Another round each, so the removal's tombstone is collected wherever it is held.
        for _ in 0..<2 {
            _ = try Self.exchange(&phone, &phoneState, with: &hub, maximumPushBytes: limit)
            _ = try Self.exchange(&tablet, &tabletState, with: &hub, maximumPushBytes: limit)
        }
        #expect(hub.state(of: .default) == phoneState)
        #expect(tabletState == phoneState)
        #expect(tabletState.visibleValue(forKey: "k", policy: .lastWriterWins) == nil)
        #expect(tabletState.visibleValue(forKey: "key7", policy: .lastWriterWins) == .string("value number 7 of this key"))
    }

    /// A store's configured largest hub request (a proxy's body limit) holds for its
    /// ordinary pushes too: its changes go in as many requests as it takes, each within it.
    @Test func aStoresMaximumHubRequestBytesHoldsForItsOrdinaryPushes() throws {
        var hub = HubSyncMachine()
        let store = ReplicatedKeyValueStore(replicaID: "phone", clock: ManualClock(startMilliseconds: 1_000))
        store.maximumHubRequestBytes = 200
        for index in 0..<30 { try store.setValue(.string("value number \(index) of this key"), forKey: "key\(index)") }
        var sizes: [Int] = []
        for _ in 0..<60 {
            let request = try store.hubRequest().bytes
            sizes.append(request.count)
            var compensations: [HubCompensation] = []
            let answer = try hub.receive(SyncMessage(encoded: request), nowMilliseconds: 1_000, compensations: &compensations)
            try store.receive(answer.encoded())
            if hub.state(of: .default) == store.replicatedState, case .poll = try SyncMessage(encoded: store.hubRequest().bytes) { break }
        }
        #expect(sizes.count >= 3, "\(sizes)")
        #expect(sizes.allSatisfy { $0 <= 200 }, "request sizes \(sizes), over the limit of 200")
        #expect(hub.state(of: .default) == store.replicatedState)
    }

    @Test func aPageThatHoldsAKeyOutsideItsSpanIsRefused() throws {
        var map = ReplicatedMap()
        map.write(.integer(1), forKey: "a", replica: "hub", timestamp: HybridTimestamp(wallMilliseconds: 1, logical: 0))
        map.write(.integer(2), forKey: "z", replica: "hub", timestamp: HybridTimestamp(wallMilliseconds: 2, logical: 0))
        let reply = SyncReply(account: .default, kind: .fullState, delta: map.asDelta, stableFrontier: VersionVector(),
                              rejectedKeys: [], keys: KeySpan(after: nil, through: "m"))
        #expect(throws: ConvergeError.self) { try SyncMessage(encoded: try SyncMessage.reply(reply).encoded()) }
        let inside = SyncReply(account: .default, kind: .fullState, delta: map.delta(for: VersionVector()), stableFrontier: VersionVector(),
                               rejectedKeys: [], keys: KeySpan(after: "m", through: nil))
        var only = inside
        only.delta.entries["a"] = nil
        #expect(try SyncMessage(encoded: try SyncMessage.reply(only).encoded()) == .reply(only))
    }
}

/// Histories the paged-hub property found, shrunk, kept as regressions.
@Suite("Paging regressions")
struct PagingRegressionTests {
    static func converges(_ operations: [SyncOperation], devices: Int = 2) -> String? {
        var run = SyncRun(SyncHistory(deviceCount: devices, operations: operations), hub: SyncPropertyTests.pagingHub(), maximumMessageBytes: 100)
        run.heal()
        return run.convergenceFailure(policies: everyPolicy)
    }

    /// A device back from retirement first pushed one page of its changes; the hub's page of
    /// the full state then set what it had sent the device from nothing, so the device's
    /// next push was believed to have seen nothing of the other device, and its overwrite
    /// of a key came back as a conflict the device never saw. A returning member now starts
    /// from what the hub sent it before its retirement.
    @Test func aReturningDeviceIsBelievedForWhatTheHubSentItBeforeItsRetirement() {
        let failure = Self.converges([
            .push(device: 0, peer: 1), .set(device: 1, key: "d", length: 4), .set(device: 1, key: "f", length: 4),
            .push(device: 0, peer: 0), .set(device: 0, key: "a", length: 6), .set(device: 0, key: "f", length: 1),
            .push(device: 1, peer: 0), .deliver(message: 2), .push(device: 1, peer: 0), .push(device: 0, peer: 0),
            .deliver(message: 6), .deliver(message: 1), .push(device: 1, peer: 0), .tick(milliseconds: 13),
            .push(device: 0, peer: 0), .deliver(message: 3), .set(device: 0, key: "d", length: 4), .push(device: 0, peer: 0),
            .duplicate(message: 6), .push(device: 1, peer: 0), .tick(milliseconds: 4), .deliver(message: 2), .deliver(message: 7),
        ])
        #expect(failure == nil, "\(failure ?? "")")
    }

    /// A retired device came back with a poll. Its full state did not fit in one reply, and
    /// the page was computed for the context the poll named, which for a retired device is
    /// nothing: the page cleaned nothing, was acknowledged as the whole full state, and the
    /// device kept a write whose removal the hub had collected meanwhile. The hub now answers
    /// such a poll by asking for a push (a page of nothing, more to come), whose context the
    /// pages are computed for. Found by the paged-hub property at CONVERGE_PROPERTY_SCALE=20.
    @Test func aReturningDevicesPollIsAnsweredWithARequestForAPushNotAPageForNothing() {
        let failure = Self.converges([
            .push(device: 2, peer: 4), .push(device: 0, peer: 4), .set(device: 4, key: "d", length: 13), .duplicate(message: 7),
            .push(device: 3, peer: 1), .push(device: 4, peer: 4), .deliver(message: 0), .deliver(message: 3), .deliver(message: 4),
            .set(device: 2, key: "e", length: 4), .set(device: 1, key: "c", length: 7), .remove(device: 4, key: "d"),
            .push(device: 4, peer: 3), .drop(message: 3), .push(device: 2, peer: 4), .deliver(message: 0), .deliver(message: 3),
            .tick(milliseconds: 3), .duplicate(message: 4), .set(device: 0, key: "e", length: 5), .deliver(message: 5),
            .set(device: 1, key: "b", length: 13), .deliver(message: 2), .tick(milliseconds: 13),
        ], devices: 5)
        #expect(failure == nil, "\(failure ?? "")")
    }

    /// A page of the full state left out a live write concurrent with the device's own
    /// removal, and announced a stable frontier covering the removal: the device collected
    /// it, and then held the write alone while the hub held both. Pages now announce no
    /// frontier.
    @Test func aPageAnnouncesNoFrontierSoNoTombstoneIsCollectedBesideAWriteItLeftOut() {
        let failure = Self.converges([
            .set(device: 1, key: "b", length: 4), .set(device: 1, key: "a", length: 15), .push(device: 0, peer: 1), .push(device: 1, peer: 0),
            .deliver(message: 3), .set(device: 1, key: "a", length: 11), .push(device: 1, peer: 0), .deliver(message: 3), .deliver(message: 0),
            .set(device: 0, key: "d", length: 13), .deliver(message: 3), .switchAccount(device: 0), .deliver(message: 7), .tick(milliseconds: 14),
            .switchAccount(device: 0), .remove(device: 0, key: "a"), .tick(milliseconds: 13),
        ])
        #expect(failure == nil, "\(failure ?? "")")
    }

    /// Found by `hubConvergesInPages` at CONVERGE_PROPERTY_SCALE=20 (seed
    /// 6023542569327080178) once ordinary pushes honoured the 100-byte request limit. d0
    /// removed "e" (d0:3); when d2's write of "e" broke the quota, the hub superseded both
    /// with a compensation (hub:1, the removal re-issued). Back on the account, d0 pushed its changes in
    /// pages; the first stopped at its own d0:2, so it claimed only d0:1, and the hub's reply,
    /// a page computed for that claim, stopped d0 there too while carrying "e" (hub:1): d0
    /// kept d0:3 beside hub:1, and since its context then covered every sibling of "e", no
    /// later delta carried the key again. A reply is now computed for the device's own
    /// writes as far as the hub holds them, which the device holds.
    @Test func aReplyToAPageOfADevicesChangesNeverStopsItsOwnWritesBelowOnesItHolds() {
        let failure = Self.converges([
            .set(device: 0, key: "e", length: 3), .set(device: 0, key: "a", length: 3), .set(device: 2, key: "d", length: 15),
            .set(device: 1, key: "a", length: 16), .push(device: 2, peer: 2), .duplicate(message: 4), .push(device: 2, peer: 1),
            .deliver(message: 5), .remove(device: 0, key: "e"), .push(device: 2, peer: 2), .push(device: 2, peer: 2),
            .set(device: 2, key: "e", length: 3), .push(device: 0, peer: 1), .push(device: 2, peer: 0), .set(device: 1, key: "a", length: 15),
            .push(device: 0, peer: 2), .push(device: 0, peer: 1), .set(device: 2, key: "e", length: 3), .deliver(message: 5),
            .push(device: 0, peer: 0), .drop(message: 6), .set(device: 2, key: "d", length: 0), .push(device: 1, peer: 0),
            .deliver(message: 2), .deliver(message: 0), .deliver(message: 7), .set(device: 0, key: "d", length: 3),
            .deliver(message: 5), .deliver(message: 0), .deliver(message: 2), .switchAccount(device: 0), .switchAccount(device: 0),
            .switchAccount(device: 2),
        ], devices: 3)
        #expect(failure == nil, "\(failure ?? "")")
    }

    /// Found by `noLostWriteAcrossHubRestoresInPages` at CONVERGE_PROPERTY_SCALE=10 (seed
    /// 13362515523591264553); shrunk, it needs no restore. d1 got "a" as [d0:3, d1:1], then
    /// the hub superseded both with compensations (hub:1, hub:2) when d3's write broke the
    /// quota. d1's poll did not match the hub's last reply (a reply to a duplicate of its
    /// push, lost), so it stood for the last context d1 had acknowledged, [d1:1], lower than
    /// what d1 held; the reply, a page for it, stopped d0 below d0:3 and carried "a" as
    /// [hub:1, hub:2]: d1 kept d0:3 beside them, and its context then covered every sibling
    /// of "a", so no later delta carried the key again. A poll that does not match the last
    /// reply, whose answer would be a page, is now asked for a push instead.
    @Test func aPollThatDoesNotMatchTheLastReplyIsAskedForAPushNotAPageForALowerContext() {
        let failure = Self.converges([
            .set(device: 0, key: "a", length: 8), .set(device: 0, key: "b", length: 6), .set(device: 0, key: "a", length: 2),
            .push(device: 0, peer: 0), .deliver(message: 6), .set(device: 3, key: "a", length: 16), .tick(milliseconds: 5),
            .set(device: 3, key: "b", length: 2), .set(device: 1, key: "a", length: 11), .switchAccount(device: 3),
            .push(device: 1, peer: 2), .push(device: 0, peer: 3), .deliver(message: 4), .duplicate(message: 2),
            .push(device: 1, peer: 3), .tick(milliseconds: 14), .duplicate(message: 4), .deliver(message: 0),
            .deliver(message: 6), .deliver(message: 6),
        ], devices: 4)
        #expect(failure == nil, "\(failure ?? "")")
    }
}
