/// The device side of the hub protocol, as a pure state machine.
///
/// It remembers only what the hub reported (its context), so every push carries exactly
/// what the hub may lack: never computed from a guessed context. Lost, duplicated and
/// reordered messages are harmless: deltas are idempotent, and the next push repairs
/// what a lost one missed.
///
/// Inputs: the device's state, from which ``request(from:maximumPushBytes:)`` makes the next request; the
/// hub's answers, which ``receive(_:)`` turns into ``SyncAction``s that the store carries
/// out; account switches.
public struct DeviceSyncMachine: Hashable, Sendable {
    /// This device's replica ID.
    public let device: ReplicaID
    /// The account the device syncs.
    public private(set) var account: AccountID
    /// The union of the contexts the hub has reported; the hub's context only grows, so
    /// this is the latest one seen.
    public internal(set) var hubContext = VersionVector()
    /// The latest stable frontier the hub announced.
    public internal(set) var stableFrontier = VersionVector()

    /// A machine that has heard nothing from the hub yet: its first request is a push of
    /// the device's whole state.
    public init(device: ReplicaID, account: AccountID = .default) {
        self.device = device
        self.account = account
    }

    /// Whether the device joined a full state the hub has not yet been told of: the next
    /// request says so (``SyncPush/acknowledgesFullState``).
    public private(set) var owesFullStateAcknowledgement = false
    /// The last key of the full-state page the device joined, if it was one page of
    /// several and not the last (``SyncPush/acknowledgedThrough``).
    public private(set) var joinedPageThrough: String?
    /// Whether the last reply was one page of a larger delta: the next request is a push,
    /// whose context tells the hub where to go on (a poll could name only a context the
    /// device may not hold, if it lost a reply).
    public internal(set) var expectsMorePages = false

    /// Whether the device owes the hub its whole state: the hub was found holding less
    /// than it reported (restored from an older copy), and may hold values whose removal
    /// the device saw and whose tombstone it has since collected. Once the device has
    /// pushed what the hub lacks, it pushes its whole state, key span by key span
    /// (``SyncPush/fullStateKeys``), each acknowledged by the hub's reply
    /// (``SyncReply/repairedKeys``).
    public internal(set) var repairsHub = false
    /// The last key of the repair the hub has acknowledged joining (`nil`: none yet).
    public internal(set) var repairedThrough: String?
    /// Writes of the hub's own ID that the device knows and the hub lost
    /// (``SyncReply/lostHubWrites``): the device counts them as seen by the hub, or it would
    /// wait for ever to repair it.
    public internal(set) var lostHubWrites = VersionVector()

    /// The largest push a device sends by default: the largest message, less room for the
    /// message's own fields.
    public static let defaultMaximumPushBytes = SyncMessage.maximumEncodedBytes - 4_096

    /// The push for the device's current state: the changes the hub lacks, or the first
    /// page of them when they do not fit in `maximumBytes` (see
    /// ``ReplicatedMap/delta(for:maximumBytes:)``): the next push carries the next page.
    ///
    /// A push of all the changes, from a device the hub has answered, takes a reply relative
    /// to the hub context and frontier the device holds (``SyncPush/relativeReplyDigest``);
    /// a page does not (the hub answers a page with a page, which is never relative).
    ///
    /// - Complexity: O(*n*) in the siblings of `state` (O(*n* log *n*) for a page).
    public func push(from state: ReplicatedMap, maximumBytes: Int = defaultMaximumPushBytes) -> SyncPush {
        let page = state.delta(for: hubContext, maximumBytes: maximumBytes)
        var push = SyncPush(account: account, device: device, delta: page.delta, acknowledgesFullState: owesFullStateAcknowledgement,
                            acknowledgedThrough: joinedPageThrough, moreToCome: !page.complete, partialKeys: page.partialKeys,
                            basis: hubContext)
        if page.complete && !hubContext.isEmpty {
            push.relativeReplyDigest = SyncPoll.digest(context: hubContext, stableFrontier: stableFrontier)
        }
        return push
    }

    /// What to send the hub for `state`: a poll when the device holds exactly the context
    /// the hub last reported (nothing new to push), a push otherwise.
    ///
    /// The acknowledgement of a joined full state goes with one request only, the next: if
    /// that request is lost, the hub sends the full state again and the device acknowledges
    /// that one. An acknowledgement that travelled with an older request could otherwise
    /// reach the hub after the device returned from a later retirement, and stand for a
    /// full state it never joined.
    ///
    /// - Parameters:
    ///   - state: The device's state.
    ///   - maximumPushBytes: The largest push to make (a transport's or a proxy's limit,
    ///     ``ReplicatedKeyValueStore/maximumHubRequestBytes``): larger changes go in pages,
    ///     one per request (``SyncPush/moreToCome``). Between pages the hub, and every device
    ///     it answers, may lack a write the device replaced by one in a later page (see
    ///     ``ReplicatedMap/delta(for:maximumBytes:)``); never one the device still holds.
    /// - Complexity: O(*n*) in the siblings of `state` for a push, O(*r*) in the replicas
    ///   of the context for a poll.
    public mutating func request(from state: ReplicatedMap, maximumPushBytes: Int = defaultMaximumPushBytes) -> SyncMessage {
        if owesFullStateAcknowledgement {
            defer {
                owesFullStateAcknowledgement = false
                joinedPageThrough = nil
            }
            return .push(push(from: state, maximumBytes: maximumPushBytes))
        }
        // A repair goes once the hub has seen everything the device has: its pages are under
        // the context the hub reported, and drop nothing the hub has not seen. Until then a
        // write the device saw replaced may still reach the hub (from its author, or from a
        // device that never saw it replaced), and the repair must come after it.
        // Writes of the hub that it lost with its state count as seen: no one can send them
        // to it again if no one holds them (and a device that holds one pushes it first).
        if repairsHub && !expectsMorePages && state.context.isDominated(by: hubContext.union(lostHubWrites)) {
            let page = state.fullStatePage(after: repairedThrough, within: hubContext, maximumBytes: maximumPushBytes)
            return .push(SyncPush(account: account, device: device, delta: page.delta, basis: hubContext, fullStateKeys: page.keys))
        }
        if !hubContext.isEmpty && state.context == hubContext && !expectsMorePages {
            return .poll(SyncPoll(account: account, device: device,
                                  digest: SyncPoll.digest(context: hubContext, stableFrontier: stableFrontier), acceptsRelativeReply: true))
        }
        let push = push(from: state, maximumBytes: maximumPushBytes)
        // A device that starts from nothing the hub reported sends its whole state; in one
        // message the hub joins it as one (dropping what the device has seen and no longer
        // has), in pages it must be followed by a repair (see ``repairsHub``).
        if hubContext.isEmpty && push.moreToCome && !repairsHub {
            repairsHub = true
            repairedThrough = nil
        }
        return .push(push)
    }

    /// Takes a message from the hub and returns what the device must do, in order.
    ///
    /// A reply of the device's account is applied (key by key, or as a whole state for a
    /// device returning after retirement), then tombstones below the hub's stable frontier
    /// are collected, then the keys the hub superseded to keep the quota are reported. An
    /// up-to-date answer needs nothing. Anything else, and every message of another account
    /// (the device may have switched while it travelled), is ignored.
    ///
    /// A reply written relative to what the device holds (``SyncReply/relativeTo``) is
    /// joined with the hub context and frontier the device holds first, and ignored if it
    /// was written relative to others (``SyncIgnoredReason/staleRelativeReply``).
    ///
    /// - Complexity: O(*r*) in the replicas of the reply's contexts (and of the hub context
    ///   the device holds, for a relative reply).
    public mutating func receive(_ message: SyncMessage) -> [SyncAction] {
        switch message {
        case .reply(let received):
            guard received.account == account else { return [.ignore(.otherAccount(received.account))] }
            // An answer to this store's previous incarnation: computed for writes it no longer
            // holds under that ID.
            if let answered = received.device, answered != device { return [.ignore(.unexpected)] }
            // A reply relative to a hub context and frontier the device no longer holds
            // exactly: joined with what it holds, it would claim what the hub never had.
            guard let reply = received.resolved(againstContext: hubContext, stableFrontier: stableFrontier) else {
                return [.ignore(.staleRelativeReply)]
            }
            // A whole reply (not a page) announces the hub's stable frontier, which only grows.
            let whole = reply.kind == .delta ? !reply.moreToCome : reply.keys == .all
            // A page of nothing under a context the device holds asks for a push (the hub
            // answered a poll that did not match its last reply, and a page computed for the
            // device's last acknowledged context could leave it holding a write the hub
            // replaced): it shows nothing of what the hub holds. (One under no context at all
            // comes from a hub that does not know the device, and is taken as a lost hub.)
            let asksForPush = reply.kind == .delta && reply.moreToCome && reply.delta.entries.isEmpty && !reply.delta.context.isEmpty
            if !asksForPush && (!hubContext.isDominated(by: reply.delta.context)
                                || (whole && !stableFrontier.isDominated(by: reply.stableFrontier))) {
                // The hub holds less than it reported before: it was restored from an older
                // copy, or it is another hub. Start again from what it holds, push at once
                // what it lacks, then repair it. (A reply that was merely late only costs a
                // larger push and a repair.)
                hubContext = reply.delta.context
                stableFrontier = reply.stableFrontier
                expectsMorePages = true
                repairsHub = true
                repairedThrough = nil
                lostHubWrites = VersionVector()
            } else {
                hubContext.formUnion(reply.delta.context)
                stableFrontier.formUnion(reply.stableFrontier)
                expectsMorePages = reply.moreToCome
            }
            lostHubWrites.formUnion(reply.lostHubWrites)
            if repairsHub, let span = reply.repairedKeys, span.after == repairedThrough {
                repairedThrough = span.through
                repairsHub = span.through != nil
            }
            if reply.kind == .fullState {
                owesFullStateAcknowledgement = true
                joinedPageThrough = reply.keys.through
                // A hub sends a full state to a device it lost track of (retired, or learnt
                // from a hub that is lost): the hub may hold what the device saw removed.
                // Once acknowledged, the device's claims are believed: it repairs the hub.
                repairsHub = true
                repairedThrough = nil
            }
            return Self.actions(for: reply)
        case .upToDate(let answered):
            return answered == account ? [] : [.ignore(.otherAccount(answered))]
        case .push, .poll, .gossip:
            return [.ignore(.unexpected)]
        }
    }

    /// What applying `reply` takes, in order.
    static func actions(for reply: SyncReply) -> [SyncAction] {
        var actions: [SyncAction]
        if reply.kind == .fullState {
            actions = [.joinFullState(reply.delta, keys: reply.keys)]
        } else if reply.moreToCome {
            actions = [.applyPage(reply.delta, partialKeys: reply.partialKeys)]
        } else {
            actions = [.applyDelta(reply.delta)]
        }
        if !reply.stableFrontier.isEmpty { actions.append(.collectTombstones(below: reply.stableFrontier)) }
        if !reply.rejectedKeys.isEmpty { actions.append(.reportRejectedKeys(reply.rejectedKeys)) }
        return actions
    }

    /// Switches to another account: forget everything the hub of the old one reported.
    public mutating func switchAccount(to newAccount: AccountID) {
        account = newAccount
        hubContext = VersionVector()
        stableFrontier = VersionVector()
        owesFullStateAcknowledgement = false
        joinedPageThrough = nil
        expectsMorePages = false
        repairsHub = false
        repairedThrough = nil
        lostHubWrites = VersionVector()
    }
}
