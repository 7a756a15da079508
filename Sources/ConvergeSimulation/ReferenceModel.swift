import Converge

/// The reference model: what every replica must hold and show, worked out from what the
/// simulator itself observed, never from the system's merge code.
///
/// It is written apart from `ReplicatedMap`, `VersionVector` and `MergePolicy` and calls none
/// of them. Its inputs are the simulator's observations: each local write (its key, value,
/// timestamp and the identity the store gave it), each message sent and delivered (a
/// message carries what its sender knew when it was sent), each flush and crash of a disk,
/// each account switch, and each compensating write the hub reported (which the model
/// checks before it believes it).
///
/// From them it keeps, per replica and account, which writes the replica knows, as a set of
/// write numbers (``WriteSet``: the order in which the simulator performed the writes), not
/// of dots: a dot can name two writes (two devices on copies of one disk write under one
/// replica ID; a restored device writes again under dots it used), and the model follows
/// each disk's lineage instead. A message carries the set its sender knew; a disk restored
/// or cloned knows the set its copy knew when it was taken. A write's causal past is the set
/// its writer knew when it wrote. Then, for any replica:
/// - a write of a key is *maximal* if the replica knows it and it is in the causal past of no
///   other write of that key the replica knows; the replica must hold exactly its maximal
///   live writes, and its maximal removals wherever a live write remains (a key that only
///   has removals may be collected);
/// - what a read returns follows from the maximal writes, by the policy's own rule
///   (``ReferenceModel/visibleValue(of:policy:)``);
/// - a removed key stays removed unless a concurrent or later write exists (it follows: the
///   removal is maximal, and the writes it saw are not).
struct ReferenceModel {
    /// A write's identity as the store gave it: its writer and number.
    struct WriteID: Hashable, Comparable, CustomStringConvertible {
        var replica: String
        var counter: UInt64

        /// Writer then number; writers in UTF-8 byte order.
        static func < (lhs: WriteID, rhs: WriteID) -> Bool {
            if lhs.replica != rhs.replica { return Array(lhs.replica.utf8).lexicographicallyPrecedes(Array(rhs.replica.utf8)) }
            return lhs.counter < rhs.counter
        }

        var description: String { "\(replica):\(counter)" }
    }

    /// When a write was made, by its writer's hybrid clock: wall time, then a counter.
    struct Stamp: Hashable, Comparable {
        var wall: UInt64
        var logical: UInt32

        static func < (lhs: Stamp, rhs: Stamp) -> Bool { (lhs.wall, lhs.logical) < (rhs.wall, rhs.logical) }
    }

    /// What a replica knows of one account: the writes it knows, by number in ``writes``.
    typealias Knowledge = WriteSet

    /// What a message or a store claims by dots: the highest number of each writer. The model
    /// takes such a claim only where the simulator reads it off a message (a page's context,
    /// a hub reply's context, a push's basis) or a store's context after a new incarnation,
    /// and turns it into writes at once (``writes(in:under:)``).
    typealias Counters = [String: UInt64]

    struct Write {
        var account: AccountID
        var key: String
        var id: WriteID
        var stamp: Stamp
        /// The value written, or `nil` for a removal.
        var value: Value?
        /// What the writer knew before it wrote.
        var past: Knowledge
        /// The write ledger's entry, for a device's write (the hub's compensations have none).
        var ledgerIndex: Int?
        /// Lost in a crash before it was durable: it never happened.
        var forgotten = false
    }

    /// A replica's expected sibling of a key.
    struct Expected: Hashable {
        var id: WriteID
        var stamp: Stamp
        var value: Value?
    }

    /// Whether a re-stamped copy stands in for its original (see
    /// ``representedIndices(knowing:)``): in the mesh and the shared folder, where devices
    /// take a restored or copied store's writes before it finds its counters reused (in a
    /// folder, twins find each other only through their files, and re-stamp from the first
    /// counter both issued). In the hub topology the hub finds the reuse before anyone takes
    /// them, and the original must stay.
    var copiesStandIn = false

    /// The write each re-stamped copy copies, by the copy's index in ``writes``.
    private(set) var originalOfCopy: [Int: Int] = [:]
    /// The writes of the same key that each re-stamped copy's original superseded and that
    /// its writer withdrew with it (its old writer ID's beyond what peers acknowledged), by
    /// the copy's index: the copy stands in for them too (see ``representedIndices(knowing:)``).
    private var supersededByCopy: [Int: [Int]] = [:]

    private(set) var writes: [Write] = [] {
        didSet {
            // Each write's writer by number (``writers``), so that sets are read against
            // counters without hashing a replica ID per write.
            for index in writerOf.count..<writes.count {
                let replica = writes[index].id.replica
                if let number = writerNumbers[replica] {
                    writerOf.append(number)
                } else {
                    writerNumbers[replica] = writerNumbers.count
                    writerOf.append(writerNumbers.count - 1)
                }
            }
            // The highest counters before each whole word of writes (a write's dot never
            // changes once it is in the list).
            while highestBefore.count << 6 <= writes.count {
                let end = highestBefore.count << 6
                var highest = highestBefore[highestBefore.count - 1]
                highest.append(contentsOf: repeatElement(0, count: writerNumbers.count - highest.count))
                for number in end - 64..<end where writes[number].id.counter > highest[writerOf[number]] {
                    highest[writerOf[number]] = writes[number].id.counter
                }
                highestBefore.append(highest)
            }
        }
    }
    private var writerNumbers: [String: Int] = [:]
    private var writerOf: [Int] = []
    /// `highestBefore[w]`: the highest counter of each writer (by number; writers first seen
    /// later have none) among writes `0..<64 w`, the writes of a ``WriteSet`` whose
    /// ``WriteSet/completeCount`` is `64 w`. A set's counters are then read off its few
    /// members beyond that, rather than off every write of the run.
    private var highestBefore: [[UInt64]] = [[]]
    private var writesByAccount: [AccountID: [Int]] = [:]
    /// The writes of each key, by account, in increasing number (see ``expected(in:knowing:)``).
    private var writesByKey: [AccountID: [String: [Int]]] = [:]
    /// Whether some write saw one numbered after it: only a copy a new incarnation made can
    /// (it saw the copies of the writes its original saw, made with it in any order).
    /// ``expected(in:knowing:)`` stops early only without such a write.
    private var somePastHoldsALaterWrite = false
    private var writeIndexByLedger: [Int: Int] = [:]
    private var knowledge: [SimulatedNetwork.Node: [AccountID: Knowledge]] = [:]
    /// Writes a replica may drop, or keep beside what superseded them, though it does not
    /// know what superseded them: a page of a larger change (see
    /// ``sent(message:from:account:cap:)``) carries its sender's state under the page's cap,
    /// where a write the sender superseded by one beyond the cap is simply absent. A key
    /// whose superseding write lies beyond the cap comes whole in a later page, so until
    /// then the receiver may hold the old write or not. An excuse travels on: a replica
    /// excused for a write passes on what it holds, so whoever learns from it before the
    /// superseding write arrives may miss the write too (a device's page to the hub, then
    /// the hub's answer to another device). A page also excuses a write beyond its cap that
    /// a write under it saw: a receiver holding the earlier write keeps it beside the later
    /// one until something covering it carries the key again. Only pages make excuses; a run
    /// without them checks everything exactly, and at the end of a converged run they no
    /// longer excuse a write held beside what superseded it.
    private var excused: [SimulatedNetwork.Node: [AccountID: WriteSet]] = [:]
    private var durable: [Int: [AccountID: Knowledge]] = [:]
    /// What the hub knew when its last backup was taken.
    private var hubBackup: [AccountID: Knowledge]?
    /// What the hub has sent each device, by account: the union of its replies' contexts,
    /// whether or not they arrived (the hub keeps the record when it answers).
    private var hubSent: [Int: [AccountID: Knowledge]] = [:]
    /// ``hubSent`` when the last backup was taken.
    private var hubSentBackup: [Int: [AccountID: Knowledge]] = [:]
    /// The hub's own writes that devices claim and the hub lost in a restore, by account
    /// (see ``hubReceivedPush(message:from:writer:hub:entries:basis:lastCopy:)``): the hub
    /// does not know them (its context and the pushes it takes are without them), but what
    /// they superseded stays superseded there, and in what it sends (see
    /// ``sent(message:from:account:cap:)``).
    private var hubLostWrites: [AccountID: Counters] = [:]
    private var inFlight: [Int: (account: AccountID, knowledge: Knowledge, excused: WriteSet)] = [:]
    /// What each device's disk had made durable when its last backup was taken (see
    /// ``backedUpDevice(_:)``).
    private var deviceBackups: [Int: [AccountID: Knowledge]] = [:]
    /// Writes of a restored device that, when its disk was restored, only messages still in
    /// flight carried (by ledger index, with those messages): one that is taken makes the
    /// write known, and once each is gone untaken the write is lost with the disk.
    private var doubtful: [(ledgerIndex: Int, carriers: Set<Int>)] = []
    /// Ledger indices of the writes forgotten when their last carrier was gone, not yet
    /// collected by ``takeNewlyForgotten()``.
    private var newlyForgotten: [Int] = []

    func knowledge(of node: SimulatedNetwork.Node, in account: AccountID) -> Knowledge {
        knowledge[node]?[account] ?? Knowledge()
    }

    /// The highest number of each writer among `known`, as a version vector would say.
    func counters(of known: Knowledge) -> Counters {
        var highest = highestBefore[known.completeCount >> 6]
        highest.append(contentsOf: repeatElement(0, count: writerNumbers.count - highest.count))
        for number in known.membersBeyondCompletePrefix where writes[number].id.counter > highest[writerOf[number]] {
            highest[writerOf[number]] = writes[number].id.counter
        }
        var result: Counters = [:]
        for (replica, writer) in writerNumbers where highest[writer] > 0 { result[replica] = highest[writer] }
        return result
    }

    /// Whether write `number`'s dot is at most `limits` (``limits(_:)``).
    private func isWithin(_ number: Int, _ limits: [UInt64]) -> Bool {
        writes[number].id.counter <= limits[writerOf[number]]
    }

    /// The highest counter of writer `writer` (by number) among `known`; 0 if it has none.
    private func highestCounter(of writer: Int?, in known: Knowledge) -> UInt64 {
        guard let writer else { return 0 }
        let before = highestBefore[known.completeCount >> 6]
        var highest = writer < before.count ? before[writer] : 0
        for number in known.membersBeyondCompletePrefix where writerOf[number] == writer {
            highest = max(highest, writes[number].id.counter)
        }
        return highest
    }

    /// `counters` by writer number, for ``isWithin(_:_:)``.
    private func limits(_ counters: Counters) -> [UInt64] {
        var result = [UInt64](repeating: 0, count: writerNumbers.count)
        for (replica, counter) in counters { if let writer = writerNumbers[replica] { result[writer] = counter } }
        return result
    }

    /// The writes of `account` a claim by dots names: every write whose dot is at most
    /// `counters`, whichever lineage made it.
    func writes(in account: AccountID, under counters: Counters) -> WriteSet {
        let limits = limits(counters)
        return WriteSet((writesByAccount[account] ?? []).filter { isWithin($0, limits) })
    }

    /// The writes whose effects `node` must show: what it knows, and for the hub also its
    /// own writes it lost in a restore that devices claim (``hubLostWrites``).
    func accountedFor(by node: SimulatedNetwork.Node, in account: AccountID) -> Knowledge {
        var known = knowledge(of: node, in: account)
        if node == .hub, let lost = hubLostWrites[account], !lost.isEmpty { known.formUnion(writes(in: account, under: lost)) }
        return known
    }

    /// What `node` accounts for together with what `others` know in `account`: a hub's
    /// copy of an account joined with what devices keep aside of it.
    func accountedFor(by node: SimulatedNetwork.Node, with others: [SimulatedNetwork.Node], in account: AccountID) -> Knowledge {
        var known = accountedFor(by: node, in: account)
        for other in others { known.formUnion(knowledge(of: other, in: account)) }
        return known
    }

    /// Whether `node` may hold `id`, or not, without knowing what superseded it (see ``excused``):
    /// only while a write that superseded it still counts (one lost in a crash supersedes
    /// nothing, and `id` is then owed as any current write is).
    func isExcused(_ id: WriteID, at node: SimulatedNetwork.Node, in account: AccountID) -> Bool {
        guard let excuses = excused[node]?[account] else { return false }
        return excuses.members.contains { writes[$0].id == id && isSuperseded($0, in: account) }
    }

    /// The writes of `key` that `node` may hold, or not, without knowing what superseded
    /// them (see ``isExcused(_:at:in:)``).
    func excusedWrites(of key: String, at node: SimulatedNetwork.Node, in account: AccountID) -> [Write] {
        guard let excuses = excused[node]?[account] else { return [] }
        return (writesByKey[account]?[key] ?? []).filter { excuses.contains($0) && isSuperseded($0, in: account) }.map { writes[$0] }
    }

    /// Whether a write of `account` that counts saw write `number`, of the same key.
    private func isSuperseded(_ number: Int, in account: AccountID) -> Bool {
        guard !writes[number].forgotten else { return false }
        let key = writes[number].key
        return (writesByKey[account]?[key] ?? []).contains { !writes[$0].forgotten && writes[$0].past.contains(number) }
    }

    // MARK: Observations

    /// A local write of device `d` (or a compensating write of the hub): returns a problem if
    /// its number is not the writer's next one (the store and the model disagree on what the
    /// writer knew).
    ///
    /// `sameTimeAs` gives the writes one compensation re-issues together the same causal past
    /// (the writer's knowledge before the first): they are siblings, none supersedes another.
    mutating func recordWrite(by node: SimulatedNetwork.Node, account: AccountID, key: String, id: WriteID, stamp: Stamp,
                              value: Value?, ledgerIndex: Int?, sameTimeAs past: Knowledge? = nil) -> String? {
        var known = knowledge(of: node, in: account)
        let writer = writerNumbers[id.replica]
        let expected = highestCounter(of: writer, in: known) + 1
        let problem = id.counter == expected || isReissueOfWithdrawn(id, of: writer, knowing: known, below: expected) ? nil
            : "the write \(id) of \(key) in \(account) is not its writer's next (the model expected number \(expected))"
        append(Write(account: account, key: key, id: id, stamp: stamp, value: value, past: past ?? known, ledgerIndex: ledgerIndex))
        if let ledgerIndex { writeIndexByLedger[ledgerIndex] = writes.count - 1 }
        known.insert(writes.count - 1)
        knowledge[node, default: [:]][account] = known
        return problem
    }

    /// Whether `id` may follow what its writer knew although it is below `expected`: in the
    /// mesh and the shared folder (``copiesStandIn``), a twin that stayed on a writer ID may
    /// issue again the counters the other copy withdrew when it re-stamped their writes (in
    /// the mesh a peer that took an original drops it when it learns the withdrawal, and
    /// relays the copy). The counter must be the next after every write of the ID that the
    /// writer knows and whose copy it does not know.
    ///
    /// The model cannot tell an original the writer knows through a peer from one its own
    /// disk holds (a store never drops its own writer ID's writes on a withdrawal): for a twin
    /// whose disk still holds a withdrawn original this check is weaker than the store's rule;
    /// a write issued under that original's dot then shows as a lost write at peers.
    private func isReissueOfWithdrawn(_ id: WriteID, of writer: Int?, knowing known: Knowledge, below expected: UInt64) -> Bool {
        guard copiesStandIn, let writer, id.counter < expected, !originalOfCopy.isEmpty else { return false }
        let withdrawn = representedIndices(knowing: known)
        var highest: UInt64 = 0
        for number in known.members where writerOf[number] == writer && !withdrawn.contains(number) {
            highest = max(highest, writes[number].id.counter)
        }
        return id.counter == highest + 1
    }

    /// Adds `write` to ``writes`` and to the lists by account and by key.
    private mutating func append(_ write: Write) {
        writes.append(write)
        writesByAccount[write.account, default: []].append(writes.count - 1)
        writesByKey[write.account, default: [:]][write.key, default: []].append(writes.count - 1)
    }

    /// A write lost in a crash before it was durable.
    mutating func forget(ledgerIndex: Int) {
        if let index = writeIndexByLedger[ledgerIndex] { writes[index].forgotten = true }
    }

    /// Forgets the write at `index` of ``writes``; returns its ledger index, if it has one.
    mutating func forget(write index: Int) -> Int? {
        writes[index].forgotten = true
        return writes[index].ledgerIndex
    }

    /// Counts the write at `index` of ``writes`` again (a disk restored from a backup that
    /// still held it); returns its ledger index, if it has one.
    mutating func revive(write index: Int) -> Int? {
        writes[index].forgotten = false
        return writes[index].ledgerIndex
    }

    /// A message leaves `node`: it carries what the node knows of `account`, or, for one
    /// page of a change too large for one message, what it knows up to the page's `cap`
    /// (the page claims to carry each writer's writes up to a number, and the receiver is
    /// then checked against that claim: a page that claims more than it carries shows as a
    /// lost write, one that carries more shows as a write the receiver cannot know). The
    /// sender's own excuses (see ``excused``) go with what it carries. The hub's messages
    /// carry what it accounts for (``accountedFor(by:in:)``): a write it lost in a restore
    /// that a device claims stays superseding what it superseded wherever the hub's answers
    /// go, as it does at the hub (which no longer holds what it superseded, and cannot send it).
    mutating func sent(message id: Int, from node: SimulatedNetwork.Node, account: AccountID, cap: Counters? = nil) {
        let known = accountedFor(by: node, in: account)
        var carried = known
        if let cap {
            // The page's claim by dots, of the writes its sender knows.
            let limits = limits(cap)
            carried = known.filter { isWithin($0, limits) }
        }
        var superseded = (excused[node]?[account] ?? WriteSet()).filter { carried.contains($0) }
        if cap != nil {
            // The writes under the cap that the sender knows were superseded: seen by another
            // write of their key that it knows (a write's past never holds the write itself).
            let indices = known.members.filter { !writes[$0].forgotten }
            var seen: [String: WriteSet] = [:]
            var seenUnderCap: [String: WriteSet] = [:]
            for index in indices {
                seen[writes[index].key, default: WriteSet()].formUnion(writes[index].past)
                if carried.contains(index) { seenUnderCap[writes[index].key, default: WriteSet()].formUnion(writes[index].past) }
            }
            for index in indices where carried.contains(index) && seen[writes[index].key]!.contains(index) {
                superseded.insert(index)
            }
            // And the writes beyond the cap that a write under it saw: the page carries the
            // later write under a context that does not cover the earlier, so a receiver that
            // holds the earlier keeps it beside the later until something covering it carries
            // the key again (a device pushing its whole state in pages, as a returning device
            // does, then repairs the hub with it: `quota-pressure.json` in 300-byte messages,
            // seed 124).
            for index in indices where !carried.contains(index) && seenUnderCap[writes[index].key]?.contains(index) == true {
                superseded.insert(index)
            }
        }
        inFlight[id] = (account, carried, superseded)
    }

    /// A copy of message `id` reaches `node`, which takes it if it is on the message's
    /// account (a device that switched ignores an answer of its old account).
    mutating func delivered(message id: Int, to node: SimulatedNetwork.Node, currentAccount: AccountID?, lastCopy: Bool) {
        guard let carried = inFlight[id] else { return }
        if lastCopy { inFlight[id] = nil }
        if let currentAccount, currentAccount != carried.account {
            settle(message: id, taken: false, lastCopy: lastCopy)
            return
        }
        settle(message: id, taken: true, lastCopy: lastCopy)
        knowledge[node, default: [:]][carried.account, default: Knowledge()].formUnion(carried.knowledge)
        if !carried.excused.isEmpty { excused[node, default: [:]][carried.account, default: WriteSet()].formUnion(carried.excused) }
    }

    /// A copy of message `id` that brings nothing (a poll, an up-to-date answer, a copy a
    /// fault cut).
    mutating func dropped(message id: Int, lastCopy: Bool) {
        if lastCopy { inFlight[id] = nil }
        settle(message: id, taken: false, lastCopy: lastCopy)
    }

    /// A backup of the hub was taken: what the hub knows now is what a restore gives back.
    mutating func backedUpHub() {
        hubBackup = knowledge[.hub] ?? [:]
        hubSentBackup = hubSent
    }

    /// The hub lost its state and restarts from its last backup (from nothing without one):
    /// it knows what it knew when the backup was taken, and what it learns from then on.
    mutating func restoredHubFromBackup() {
        knowledge[.hub] = hubBackup ?? [:]
        hubLostWrites = [:]
        hubSent = hubBackup == nil ? [:] : hubSentBackup
    }

    /// The hub answered device `d` with a reply under `context`.
    mutating func hubReplied(to d: Int, account: AccountID, context: Counters) {
        let known = knowledge(of: .hub, in: account)
        var sent = hubSent[d]?[account] ?? WriteSet()
        let limits = limits(context)
        // What the hub sent before is sent still: only the rest need be read.
        for number in known.members(notIn: sent) where isWithin(number, limits) { sent.insert(number) }
        hubSent[d, default: [:]][account] = sent
    }

    /// A push of device `d` (whose writer ID is `writer`) reaches the hub: the hub
    /// learns what the push carries and what the device claims, as far as the hub's
    /// documented rule believes it. A device learns others' writes only from the hub, so the
    /// hub believes the device's claims on its own writes fully, on other
    /// writers' only up to what it sent the device; the writes the push carries it learns in
    /// any case (`entries`). A push computed for more than the hub holds (`basis`: a hub
    /// restored from an older copy) is not taken at all. Before any restore the cap never
    /// binds (what a device knows of others it was sent); after one it does.
    ///
    /// The hub's own writes (`hub`, any incarnation) a device claims beyond that are noted in
    /// ``hubLostWrites``: an honest device claims more of them than it was sent only when the
    /// hub lost them in a restore, and then the hub has taken account of them as far as
    /// anyone can (a device that holds one pushes it; a write one of them superseded stays
    /// superseded).
    mutating func hubReceivedPush(message id: Int, from d: Int, writer: String, hub: String, entries: [WriteID], basis: Counters,
                                  lastCopy: Bool) {
        guard let carried = inFlight[id] else { return }
        if lastCopy { inFlight[id] = nil }
        var known = knowledge(of: .hub, in: carried.account)
        let knownCounters = counters(of: known)
        guard basis.allSatisfy({ $0.value <= knownCounters[$0.key, default: 0] }) else {
            settle(message: id, taken: false, lastCopy: lastCopy)
            return
        }
        settle(message: id, taken: true, lastCopy: lastCopy)
        let sent = hubSent[d]?[carried.account] ?? WriteSet()
        let writerNumber = writerNumbers[writer]
        var believed = carried.knowledge.intersection(sent)
        for number in carried.knowledge.members(notIn: sent) where writerOf[number] == writerNumber { believed.insert(number) }
        var lost = hubLostWrites[carried.account] ?? [:]
        let believedCounters = counters(of: believed)
        for (replica, counter) in counters(of: carried.knowledge) where replica == hub || replica.hasPrefix(hub + "~") {
            if counter > max(believedCounters[replica, default: 0], knownCounters[replica, default: 0]) {
                lost[replica] = max(lost[replica, default: 0], counter)
            }
        }
        hubLostWrites[carried.account] = lost
        // The writes the push carries, and (its context covering them) the earlier ones of
        // their writers that the device knows.
        var entryCounters: Counters = [:]
        for entry in entries where entry.counter > entryCounters[entry.replica, default: 0] { entryCounters[entry.replica] = entry.counter }
        let limits = limits(entryCounters)
        known.formUnion(believed)
        // What the hub knows or believes already needs no reading.
        for number in carried.knowledge.members(notIn: known) where isWithin(number, limits) { known.insert(number) }
        knowledge[.hub, default: [:]][carried.account] = known
        if !carried.excused.isEmpty { excused[.hub, default: [:]][carried.account, default: WriteSet()].formUnion(carried.excused) }
    }

    /// Device `d`'s disk made everything durable.
    mutating func flushed(device d: Int) { durable[d] = knowledge[.device(d)] ?? [:] }

    /// Device `d` lost power: it knows what its disk had made durable.
    mutating func crashed(device d: Int) { knowledge[.device(d)] = durable[d] ?? [:] }

    // MARK: Restored devices

    /// A backup of device `d`'s disk was taken: what its disk has made durable is what a
    /// restore gives back.
    mutating func backedUpDevice(_ d: Int) { deviceBackups[d] = durable[d] ?? [:] }

    /// The writes of device `d`'s last backup that were forgotten since it was taken (lost
    /// with the disk when it was cloned over or restored from another backup, or replaced by
    /// a new incarnation's copies): restoring the backup brings them back, so they count
    /// again (their dots may name two writes again, until the device finds it out anew).
    ///
    /// - Returns: The ledger indices of the writes that count again.
    mutating func revivedFromBackup(of d: Int) -> [Int] {
        var revived: [Int] = []
        for (_, known) in (deviceBackups[d] ?? [:]).sorted(by: { $0.key.rawValue.precedesInUTF8Order($1.key.rawValue) }) {
            for number in known.members where writes[number].forgotten {
                writes[number].forgotten = false
                if let ledgerIndex = writes[number].ledgerIndex { revived.append(ledgerIndex) }
            }
        }
        return revived
    }

    /// Device `d`'s disk was replaced by its last backup (an empty disk without one): it
    /// knows what the backup knew. Of `ownWrites` (the device's writes that still count, by
    /// ledger index), those the backup does not hold are lost with the disk when no other
    /// replica (the hub, a device, the hub's backup) knows them: never acknowledged, and
    /// their dots will be reused, as after a crash. Those only messages still in flight carry
    /// are lost if none of them is taken (see ``doubtful``); the others count, and the device
    /// must recover them (a new incarnation) without loss.
    ///
    /// - Returns: The ledger indices of the writes lost now.
    mutating func restoredDevice(_ d: Int, ownWrites: [(ledgerIndex: Int, account: AccountID, id: WriteID)]) -> [Int] {
        replacedDisk(of: d, with: deviceBackups[d] ?? [:], ownWrites: ownWrites)
    }

    /// Device `d`'s disk was replaced by a copy of device `source`'s durable disk (a clone):
    /// it knows what that disk knew, and its own writes are forgotten or kept as in
    /// ``restoredDevice(_:ownWrites:)``.
    ///
    /// - Returns: The ledger indices of the writes lost now.
    mutating func clonedDevice(_ d: Int, from source: Int, ownWrites: [(ledgerIndex: Int, account: AccountID, id: WriteID)]) -> [Int] {
        replacedDisk(of: d, with: durable[source] ?? [:], ownWrites: ownWrites)
    }

    private mutating func replacedDisk(of d: Int, with backup: [AccountID: Knowledge],
                                       ownWrites: [(ledgerIndex: Int, account: AccountID, id: WriteID)]) -> [Int] {
        var lost: [Int] = []
        for write in ownWrites {
            guard let number = writeIndexByLedger[write.ledgerIndex], !(backup[write.account]?.contains(number) ?? false),
                  !isKnown(number, in: write.account, apartFrom: .device(d)) else { continue }
            let carriers = Set(inFlight.filter { $0.value.account == write.account && $0.value.knowledge.contains(number) }.keys)
            if carriers.isEmpty {
                forget(ledgerIndex: write.ledgerIndex)
                lost.append(write.ledgerIndex)
            } else {
                doubtful.append((write.ledgerIndex, carriers))
            }
        }
        knowledge[.device(d)] = backup
        durable[d] = backup
        return lost
    }

    /// Whether a replica other than `node`, or the hub's backup, knows write `number` in `account`.
    private func isKnown(_ number: Int, in account: AccountID, apartFrom node: SimulatedNetwork.Node) -> Bool {
        // Any one is enough: the order the dictionary visits them in decides nothing.
        if knowledge.contains(where: { $0.key != node && ($0.value[account]?.contains(number) ?? false) }) { return true }
        return hubBackup?[account]?.contains(number) ?? false
    }

    /// A copy of message `id` was taken (or, with `taken` false, lost or refused): a
    /// doubtful write it carries is known from now on, or lost once no carrier is left.
    private mutating func settle(message id: Int, taken: Bool, lastCopy: Bool) {
        guard !doubtful.isEmpty else { return }
        if taken {
            doubtful.removeAll { $0.carriers.contains(id) }
            return
        }
        guard lastCopy else { return }
        for index in doubtful.indices { doubtful[index].carriers.remove(id) }
        for entry in doubtful where entry.carriers.isEmpty {
            forget(ledgerIndex: entry.ledgerIndex)
            newlyForgotten.append(entry.ledgerIndex)
        }
        doubtful.removeAll { $0.carriers.isEmpty }
    }

    /// The ledger indices of the writes lost since the last call, when the last message that
    /// carried them was gone (see ``restoredDevice(_:ownWrites:)``).
    mutating func takeNewlyForgotten() -> [Int] {
        defer { newlyForgotten.removeAll() }
        return newlyForgotten
    }

    /// One write a new incarnation re-stamped: its key, its dot before and after, and what
    /// the store kept of it (value and timestamp), with the ledger entry of its new dot.
    struct Restamp {
        var key: String
        var old: WriteID
        var new: WriteID
        var stamp: Stamp
        var value: Value?
        var ledgerIndex: Int
    }

    /// Device `d`'s store found its counters reused and started a new incarnation in
    /// `account`: each re-stamped write is a new write under its new dot with the same value,
    /// timestamp and causal past as the write it copies (neither supersedes the other: both
    /// can be held, as the store documents), the copied write being the one of that dot this
    /// device's lineage knows (a twin may have written another under the same dot). The
    /// device's context of its old writer ID goes back to `oldWriterCount` (what peers
    /// acknowledged: a store's own claim, read off its context as before; see ``Counters``
    /// for the others), and it knows the copies.
    ///
    /// - Returns: The problems (a re-stamped write the model does not know the device held),
    ///   and the indices in ``writes`` of the copied writes no other replica and no message
    ///   on its way knows: those are gone once the new incarnation is on disk.
    mutating func reincarnated(device d: Int, account: AccountID, oldWriter: String, oldWriterCount: UInt64,
                               restamped: [Restamp]) -> (problems: [String], replaced: [Int]) {
        var problems: [String] = [], replaced: [Int] = []
        let indices = writesByAccount[account] ?? []
        var known = knowledge(of: .device(d), in: account)
        // The write each re-stamp copies: one this device's lineage knows (a twin's write
        // of the same dot is another write, which this disk never held).
        var copies: [(original: Int, restamp: Restamp)] = []
        for restamp in restamped {
            func isCopied(_ index: Int) -> Bool {
                let write = writes[index]
                return !write.forgotten && write.id == restamp.old && write.key == restamp.key && write.stamp == restamp.stamp
                    && write.value == restamp.value
            }
            guard let copied = indices.last(where: { known.contains($0) && isCopied($0) }) else {
                problems.append("d\(d) re-stamped \(restamp.old) of \(restamp.key) in \(account) as \(restamp.new), a write the model does not know it held")
                continue
            }
            copies.append((copied, restamp))
        }
        // The old writer ID's writes beyond what peers acknowledged: the store's context for
        // it goes back there (the store's claim, read off its context), so neither the device
        // nor a copy counts them as seen any more.
        func beyondAcknowledged(_ number: Int) -> Bool {
            writes[number].id.replica == oldWriter && writes[number].id.counter > oldWriterCount
        }
        // What each copy saw: what its original saw, but of the old writer ID only what peers
        // acknowledged (and the copies of the re-stamped writes the original saw).
        let first = appendCopies(copies, pasts: copies.map { writes[$0.original].past.filter { !beyondAcknowledged($0) } })
        for (offset, (copied, restamp)) in copies.enumerated() {
            let superseded = writes[copied].past.members.filter {
                beyondAcknowledged($0) && writes[$0].account == account && writes[$0].key == restamp.key
            }
            if !superseded.isEmpty { supersededByCopy[first + offset] = superseded }
            // The copy replaces the write: the store no longer holds it under its old dot. It
            // still counts where another replica (or a message on its way) knows it.
            if !isKnown(copied, in: account, besides: .device(d)) { replaced.append(copied) }
        }
        known = known.filter { !beyondAcknowledged($0) }
        for offset in copies.indices { known.insert(first + offset) }
        knowledge[.device(d), default: [:]][account] = known
        return (problems, replaced)
    }

    /// Device `d`'s store adopted, in `account`, writes an earlier writer ID of its replica
    /// issued under counters another copy issued too, which no copy of the store holds any
    /// more: each is a new write under its new dot with the same value, timestamp and causal
    /// past as the write it copies (one the device knows now, from the gossip it took), and
    /// stands in for it (see ``copiesStandIn``). The device knows the copies.
    ///
    /// - Returns: The problems (an adopted write the model does not know the device took).
    mutating func adopted(device d: Int, account: AccountID, restamped: [Restamp]) -> [String] {
        var problems: [String] = []
        let indices = writesByAccount[account] ?? []
        var known = knowledge(of: .device(d), in: account)
        var copies: [(original: Int, restamp: Restamp)] = []
        for restamp in restamped {
            guard let copied = indices.last(where: {
                let write = writes[$0]
                return known.contains($0) && !write.forgotten && write.id == restamp.old && write.key == restamp.key
                    && write.stamp == restamp.stamp && write.value == restamp.value
            }) else {
                problems.append("d\(d) adopted \(restamp.old) of \(restamp.key) in \(account) as \(restamp.new), a write the model does not know it took")
                continue
            }
            copies.append((copied, restamp))
        }
        // What each copy saw: what its original saw (and the copies of the adopted writes it saw).
        let first = appendCopies(copies, pasts: copies.map { writes[$0.original].past })
        for offset in copies.indices { known.insert(first + offset) }
        knowledge[.device(d), default: [:]][account] = known
        return problems
    }

    /// Appends a copy of each original in `copies` under its re-stamped dot, standing in for
    /// the original, seeing the same element of `pasts` and the copies of the originals its
    /// original saw.
    ///
    /// - Returns: The index in ``writes`` of the first copy (the others follow in order).
    private mutating func appendCopies(_ copies: [(original: Int, restamp: Restamp)], pasts: [WriteSet]) -> Int {
        let first = writes.count
        for (offset, (copied, restamp)) in copies.enumerated() {
            var copy = writes[copied]
            copy.id = restamp.new
            copy.past = pasts[offset]
            for (other, (original, _)) in copies.enumerated() where writes[copied].past.contains(original) {
                copy.past.insert(first + other)
                if other > offset { somePastHoldsALaterWrite = true }
            }
            copy.ledgerIndex = restamp.ledgerIndex
            append(copy)
            writeIndexByLedger[restamp.ledgerIndex] = first + offset
            originalOfCopy[first + offset] = copied
        }
        return first
    }

    /// Whether a node other than `node`, or a message on its way, knows write `number` in `account`.
    func isKnown(_ number: Int, in account: AccountID, besides node: SimulatedNetwork.Node) -> Bool {
        for (other, accounts) in knowledge where other != node {
            if let known = accounts[account], known.contains(number) { return true }
        }
        return inFlight.values.contains { $0.account == account && $0.knowledge.contains(number) }
    }

    /// The dots that name more than one write that counts (each once, in account then dot
    /// order): counters a restored device reused that no new incarnation resolved.
    func reusedDots() -> [(account: AccountID, id: WriteID)] {
        var result: [(account: AccountID, id: WriteID)] = []
        for account in writesByAccount.keys.sorted(by: { $0.rawValue.precedesInUTF8Order($1.rawValue) }) {
            var seen: Set<WriteID> = [], reported: Set<WriteID> = []
            for index in writesByAccount[account]! where !writes[index].forgotten {
                let id = writes[index].id
                if !seen.insert(id).inserted && reported.insert(id).inserted { result.append((account, id)) }
            }
        }
        return result.sorted { $0.account == $1.account ? $0.id < $1.id : $0.account.rawValue.precedesInUTF8Order($1.account.rawValue) }
    }

    /// Whether another write that counts has the same dot as `id` in `account`: a dot reused
    /// after a restore that no new incarnation has resolved.
    func isReused(_ id: WriteID, in account: AccountID) -> Bool {
        (writesByAccount[account] ?? []).filter { !writes[$0].forgotten && writes[$0].id == id }.count > 1
    }

    // MARK: What must hold

    /// The writes of `key` in `account` a replica knowing `known` must treat as current: the
    /// maximal ones, in identity order.
    ///
    /// A key is in the result if the replica knows a write of it that counts (its maximal
    /// writes may then still be none, all stood in for).
    ///
    /// - Complexity: Per key, O(its writes newer than the complete prefix of what its newest
    ///   known writes saw): the writes below that prefix are all superseded, and they saw
    ///   only writes older than themselves, so they are not read (unless a new incarnation's
    ///   copy saw a later copy: then every known write of the key is read).
    func expected(in account: AccountID, knowing known: Knowledge) -> [String: [Expected]] {
        let standIns = representedIndices(knowing: known)
        var result: [String: [Expected]] = [:]
        for (key, all) in writesByKey[account] ?? [:] {
            // The known writes of this key that count, newest first, and what they saw
            // together: a write is superseded if one saw it.
            var indices: [Int] = []
            var seen = WriteSet()
            for index in all.reversed() {
                if index < seen.completeCount && !somePastHoldsALaterWrite { break }
                guard known.contains(index) && !writes[index].forgotten else { continue }
                indices.append(index)
                seen.formUnion(writes[index].past)
            }
            guard !indices.isEmpty else { continue }
            let maximal = indices.reversed().filter { !seen.contains($0) && !standIns.contains($0) }
                .map { Expected(id: writes[$0].id, stamp: writes[$0].stamp, value: writes[$0].value) }
                .sorted { $0.id < $1.id }
            result[key] = maximal
        }
        return result
    }

    /// The writes a new incarnation re-stamped whose copy `known` includes: the copy stands in
    /// for the original (same value, timestamp and past). In the mesh, replicas that took the
    /// original before its writer found its counters reused drop it when they learn the
    /// counters were withdrawn; one that never learns may keep it beside the copy. The same
    /// holds for the writes of that key the original superseded under the withdrawn counters
    /// (a value the writer replaced before it found the reuse): the copy's past no longer
    /// names them, since its writer no longer claims their dots, and peers drop them with the
    /// withdrawal or keep them beside the copy.
    func representedIndices(knowing known: Knowledge) -> Set<Int> {
        var result: Set<Int> = []
        guard copiesStandIn else { return result }
        // A copy lost in a crash before it was durable stands in for nothing.
        for (copy, original) in originalOfCopy where known.contains(copy) && !writes[copy].forgotten {
            result.insert(original)
            result.formUnion(supersededByCopy[copy] ?? [])
        }
        return result
    }

    /// ``representedIndices(knowing:)`` in `account`, as expected siblings by key.
    func representedOriginals(in account: AccountID, knowing known: Knowledge) -> [String: [Expected]] {
        var result: [String: [Expected]] = [:]
        for index in representedIndices(knowing: known).sorted() where writes[index].account == account {
            result[writes[index].key, default: []].append(Expected(id: writes[index].id, stamp: writes[index].stamp, value: writes[index].value))
        }
        return result
    }

    /// What a read must return given a key's maximal writes, under `policy`, by the model's
    /// own reading of each policy's documented rule.
    static func visibleValue(of siblings: [Expected], policy: PolicyName) -> Value? {
        if siblings.count == 1 { return siblings[0].value }
        let live = siblings.filter { $0.value != nil }
        if live.isEmpty { return nil }
        func latest(_ candidates: [Expected]) -> Expected? {
            candidates.max { lhs, rhs in lhs.stamp != rhs.stamp ? lhs.stamp < rhs.stamp : lhs.id < rhs.id }
        }
        switch policy {
        case .lww: return latest(siblings)?.value
        case .addWins: return latest(live)?.value
        case .removeWins: return live.count < siblings.count ? nil : latest(siblings)?.value
        case .multiValue: return live.count == 1 ? live[0].value : .array(live.map { $0.value! })
        case .priority: return siblings.min { $0.id < $1.id }?.value
        }
    }

    /// Usage by the quota's two measures (keys with a live value, bytes of values) of the
    /// maximal writes a replica knowing `known` holds.
    func usage(in account: AccountID, knowing known: Knowledge) -> (keys: Int, bytes: Int, perKey: [String: (live: Bool, bytes: Int)]) {
        usage(of: expected(in: account, knowing: known))
    }

    /// What `held` (a replica's expected siblings, by key) counts against the quota.
    private func usage(of held: [String: [Expected]]) -> (keys: Int, bytes: Int, perKey: [String: (live: Bool, bytes: Int)]) {
        var perKey: [String: (live: Bool, bytes: Int)] = [:]
        var keys = 0, bytes = 0
        for (key, siblings) in held {
            let live = siblings.contains { $0.value != nil }
            let size = siblings.reduce(0) { $0 + ($1.value?.encodedSize ?? 0) }
            perKey[key] = (live, size)
            if live { keys += 1 }
            bytes += size
        }
        return (keys, bytes, perKey)
    }

    /// ``usage(in:knowing:)`` at its most for `node`: every write a page excused there (see
    /// ``isExcused(_:at:in:)``) counted as held beside what its key holds, since it may be.
    func mostUsage(in account: AccountID, knowing known: Knowledge, at node: SimulatedNetwork.Node)
        -> (keys: Int, bytes: Int, perKey: [String: (live: Bool, bytes: Int)]) {
        let held = expected(in: account, knowing: known)
        var (keys, bytes, perKey) = usage(of: held)
        for index in (excused[node]?[account] ?? WriteSet()).members where isSuperseded(index, in: account) {
            let write = writes[index]
            guard let value = write.value, !(held[write.key] ?? []).contains(where: { $0.id == write.id }) else { continue }
            let before = perKey[write.key] ?? (false, 0)
            if !before.live { keys += 1 }
            bytes += value.encodedSize
            perKey[write.key] = (true, before.bytes + value.encodedSize)
        }
        return (keys, bytes, perKey)
    }

    /// Why a replica knowing `known` must not hold write `id` of `key`: in words.
    func whyNotCurrent(_ id: WriteID, key: String, in account: AccountID, knowing known: Knowledge) -> String {
        let matching = (writesByAccount[account] ?? []).filter { writes[$0].id == id && writes[$0].key == key }
        guard let index = matching.last(where: { !writes[$0].forgotten }) else {
            return matching.isEmpty ? "a write the model never saw" : "a write lost in a crash before it was durable"
        }
        let knownMatching = matching.filter { known.contains($0) && !writes[$0].forgotten }
        if knownMatching.isEmpty { return "a write this replica cannot know of" + (matching.count > 1 ? " (its dot names another write it does not know either)" : "") }
        let superseding = (writesByAccount[account] ?? []).first { other in
            writes[other].key == key && !writes[other].forgotten && known.contains(other)
                && knownMatching.contains { writes[other].past.contains($0) }
        }
        if let superseding { return "superseded by \(writes[superseding].id), which saw it" }
        return "a current write with another value or time (\(writes[index].value.map { "\($0)".prefix(30) } ?? "removal"))"
    }

    /// Whether a write of `key` named `later` that counts saw one named `earlier`.
    func saw(_ later: WriteID, _ earlier: WriteID, key: String, in account: AccountID) -> Bool {
        let all = writesByKey[account]?[key] ?? []
        let earlierIndices = all.filter { writes[$0].id == earlier }
        return all.contains { index in
            writes[index].id == later && !writes[index].forgotten && earlierIndices.contains { writes[index].past.contains($0) }
        }
    }

    /// The ledger index of a write, if a device made it and it still counts.
    func ledgerIndex(of id: WriteID, in account: AccountID) -> Int? {
        for index in (writesByAccount[account] ?? []).reversed() where writes[index].id == id && !writes[index].forgotten {
            return writes[index].ledgerIndex
        }
        return nil
    }
}
