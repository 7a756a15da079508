import Converge
@_spi(Testing) import ConvergeSharedFolder
import ConvergeSimulation

/// One step of a random multi-device history through the hub protocol.
public enum SyncOperation: Hashable, Sendable, CustomStringConvertible {
    case set(device: Int, key: String, length: Int)
    case remove(device: Int, key: String)
    /// The device sends a push to the hub (or, in the mesh topology, gossip to `peer`; in
    /// the folder topology, it syncs through the folder); it travels as in-flight messages
    /// (each file written travels to each other device).
    case push(device: Int, peer: Int)
    case deliver(message: Int)
    case duplicate(message: Int)
    case drop(message: Int)
    case tick(milliseconds: UInt64)
    /// The device switches between accounts "A" and "B".
    case switchAccount(device: Int)
    /// The hub's state is copied aside (a backup).
    case backupHub
    /// The hub is restored from one of the copies (counting back from the latest), losing
    /// what it learnt since.
    case restoreHub(backup: Int)

    public var description: String {
        switch self {
        case .set(let d, let key, let length): return "d\(d).set(\(key), \(length) chars)"
        case .remove(let d, let key): return "d\(d).remove(\(key))"
        case .push(let d, let p): return "d\(d) pushes (mesh: to d\(p))"
        case .deliver(let m): return "deliver #\(m)"
        case .duplicate(let m): return "duplicate #\(m)"
        case .drop(let m): return "drop #\(m)"
        case .tick(let ms): return "tick(\(ms)ms)"
        case .switchAccount(let d): return "d\(d) switches account"
        case .backupHub: return "backup hub"
        case .restoreHub(let b): return "restore hub from backup #\(b)"
        }
    }
}

/// A random history of devices syncing through a hub.
public struct SyncHistory: Hashable, Sendable, CustomStringConvertible {
    public var deviceCount: Int
    public var operations: [SyncOperation]

    /// The quota of every history: small, so that concurrent growth breaks it often.
    public static let quota = Quota(maximumKeyCount: 4, maximumTotalValueBytes: 48, maximumValueBytes: 20, maximumKeyBytes: 4)
    /// Keys of 1 to 5 bytes, against the 4-byte limit.
    public static let keys = ["a", "b", "c", "d", "e", "f", "ghijk"]
    public static let retirementIntervalMilliseconds: UInt64 = 15

    public init(deviceCount: Int, operations: [SyncOperation]) {
        self.deviceCount = deviceCount
        self.operations = operations
    }

    package static func generate(using generator: inout Xoshiro256StarStar, devices: ClosedRange<Int> = 2...8,
                                maximumOperations: Int = 80, accounts: Bool = true, restores: Bool = false) -> SyncHistory {
        let count = generator.next(in: devices)
        var operations: [SyncOperation] = []
        for _ in 0..<generator.next(in: 1...maximumOperations) {
            let d = generator.next(below: count)
            if restores {
                let r = generator.next(below: 100)
                if r < 6 { operations.append(.backupHub); continue }
                if r < 10 { operations.append(.restoreHub(backup: generator.next(below: 4))); continue }
            }
            switch generator.next(below: 100) {
            case 0..<28: operations.append(.set(device: d, key: generator.element(of: keys), length: generator.next(below: 22)))
            case 28..<38: operations.append(.remove(device: d, key: generator.element(of: keys)))
            case 38..<56: operations.append(.push(device: d, peer: generator.next(below: count)))
            case 56..<78: operations.append(.deliver(message: generator.next(below: 8)))
            case 78..<83: operations.append(.duplicate(message: generator.next(below: 8)))
            case 83..<89: operations.append(.drop(message: generator.next(below: 8)))
            case 89..<97: operations.append(.tick(milliseconds: UInt64(generator.next(below: 16))))
            default: operations.append(accounts ? .switchAccount(device: d) : .push(device: d, peer: generator.next(below: count)))
            }
        }
        return SyncHistory(deviceCount: count, operations: operations)
    }

    public func shrunk() -> [SyncHistory] {
        shrinkList(operations).map { SyncHistory(deviceCount: deviceCount, operations: $0) }
    }

    public var description: String {
        "\(deviceCount) devices, \(operations.count) operations:\n"
            + operations.enumerated().map { "  \($0.offset): \($0.element)" }.joined(separator: "\n")
    }
}

/// Runs a ``SyncHistory`` on real ``ReplicatedKeyValueStore``s (on in-memory storage)
/// through the sync seam every transport uses: a device's requests and gossip come from
/// its store, and every answer is carried out by its store, as with any transport. The hub
/// is the real ``HubSyncMachine``; in the mesh topology the stores gossip with each other;
/// in the folder topology they sync through the real `SharedFolderSync` on a simulated
/// folder whose files reach each device late, out of order, or (if removed first) never.
/// Invariants are checked after every step.
public struct SyncRun {
    /// How the devices are connected.
    public enum Topology: String, Hashable, Sendable, CaseIterable {
        /// Through the hub.
        case hub
        /// Gossip between devices.
        case mesh
        /// Files in a shared folder.
        case folder
    }

    public struct Device {
        public let id: ReplicaID
        public let store: ReplicatedKeyValueStore
        /// The store's physical clock: the run's time plus the device's skew.
        let clock: ManualClock
        public let skewMilliseconds: UInt64
        /// The accounts the device has been on: it holds data of each (the store keeps the
        /// accounts it is not on aside).
        public fileprivate(set) var accounts: Set<AccountID>
    }

    /// An accepted local write, for the no-lost-write check.
    public struct Write {
        public var account: AccountID
        public var device: Int
        public var key: String
        public var dot: Dot
        public var value: Value?
        /// The writer's context right after the write: the writes it supersedes.
        public var context: VersionVector
        /// Superseded by a compensating write of the hub (a counted resolution).
        public var compensated = false
    }

    /// A message in flight, as the bytes a transport would carry.
    enum Message {
        /// A push or a poll, from `device`, to the hub.
        case request(from: Int, [UInt8])
        /// A reply or an up-to-date answer, from the hub.
        case answer(to: Int, [UInt8])
        /// Gossip between devices.
        case gossip(to: Int, [UInt8])
        /// A file of the shared folder reaching a device.
        case arrival(path: [String], reader: Int)
    }

    public private(set) var devices: [Device]
    public private(set) var hub: HubSyncMachine
    public let topology: Topology
    /// The folder of the folder topology.
    package let folder = SimulatedFolder()
    /// In the mesh and folder topologies, the converged state of each account after ``heal()``.
    public private(set) var meshStates: [AccountID: ReplicatedMap] = [:]
    public private(set) var writes: [Write] = []
    /// Invariants broken so far, with the step.
    public private(set) var violations: [String] = []
    /// What the run exercised, to show the properties are not vacuous.
    public private(set) var compensations = 0
    public private(set) var fullStateReplies = 0
    public private(set) var accountSwitches = 0
    /// Polls answered "up to date" (the compact steady-state exchange).
    public private(set) var upToDateAnswers = 0
    /// Replies written relative to what the device held (``SyncReply/relativeTo``).
    public private(set) var relativeReplies = 0
    /// Folder files delivered to a device after a later file of the same writer.
    public private(set) var filesOutOfOrder = 0
    /// Folder files removed (compacted) before they reached a device, which they never do.
    public private(set) var filesNeverDelivered = 0
    /// The latest file of each writer's folder delivered to each device, by sequence name.
    private var latestDelivered: [[String]: String] = [:]
    private var inFlight: [Message] = []
    /// The hub's backups, oldest first, and how many times one was restored.
    public private(set) var backups: [HubSyncMachine] = []
    public private(set) var restores = 0
    private var now: UInt64 = 1_000
    private var step = 0
    /// A broken sender: computes pushes (and gossip) for its own context instead of the
    /// context the hub (or peer) reported.
    private let guessesHubContext: Bool
    /// A broken device: carries its data into the account it switches to.
    private let leaksAcrossAccounts: Bool
    /// A broken folder reader: takes a replica's files past a gap.
    private let readsPastGaps: Bool
    public static let accounts: [AccountID] = ["A", "B"]

    /// Hub replies cut into pages (their context below the hub's, or a full state for a
    /// span of keys): shows that a run with small messages exercised paging.
    public private(set) var pagedReplies = 0
    /// Whether the last ``heal()`` ended with a round in which every device was told it is
    /// up to date.
    public private(set) var quiet = false
    /// How many rounds of exchanges `heal()` runs: more when messages travel in pages.
    private let healRounds: Int

    /// - Parameter maximumMessageBytes: The largest request a device sends (and, if the
    ///   caller set the hub's ``HubSyncMachine/maximumReplyBytes`` too, what travels in
    ///   pages); `nil` for the default.
    public init(_ history: SyncHistory, hub: HubSyncMachine, topology: Topology = .hub, guessesHubContext: Bool = false,
                leaksAcrossAccounts: Bool = false, readsPastGaps: Bool = false, maximumMessageBytes: Int? = nil, debug: Bool = false) {
        debugLog = debug
        healRounds = maximumMessageBytes == nil ? 4 : 40
        self.leaksAcrossAccounts = leaksAcrossAccounts
        self.readsPastGaps = readsPastGaps
        self.topology = topology
        devices = (0..<history.deviceCount).map { index in
            let id = ReplicaID("d\(index)")!
            let clock = ManualClock(startMilliseconds: 0)
            // An empty in-memory storage cannot fail to load.
            let store = try! ReplicatedKeyValueStore(replicaID: id, storage: InMemoryStorage(), quota: SyncHistory.quota,
                                                     clock: clock)
            try! store.switchAccount(to: "A")
            if let maximumMessageBytes { store.maximumHubRequestBytes = maximumMessageBytes }
            return Device(id: id, store: store, clock: clock, skewMilliseconds: UInt64(index % 3) * 7, accounts: ["A"])
        }
        self.hub = hub
        self.guessesHubContext = guessesHubContext
        for operation in history.operations {
            run(operation)
            step += 1
        }
    }

    // MARK: Messages

    private mutating func requestMessage(for d: Int) -> Message {
        let store = devices[d].store
        if guessesHubContext {
            let state = store.replicatedState
            return .request(from: d, encode(.push(SyncPush(account: store.account, device: store.replicaID,
                                                             delta: state.delta(for: state.context)))))
        }
        do { return .request(from: d, try store.hubRequest().bytes) } catch {
            violations.append("step \(step): \(devices[d].id) could not make a request: \(error)")
            return .request(from: d, [])
        }
    }

    private mutating func gossip(from d: Int, to peer: Int) -> Message {
        let store = devices[d].store
        if guessesHubContext {
            let state = store.replicatedState
            return .gossip(to: peer, encode(.gossip(SyncGossip(account: store.account, sender: store.replicaID,
                                                               delta: state.delta(for: state.context), wantsReply: true))))
        }
        do { return .gossip(to: peer, try store.gossip(to: devices[peer].id)) } catch {
            violations.append("step \(step): \(devices[d].id) could not make gossip: \(error)")
            return .gossip(to: peer, [])
        }
    }

    /// Syncs device `d` through the folder; each file it writes travels to every other device.
    private mutating func syncThroughFolder(_ d: Int) {
        var sync = SharedFolderSync(files: folder.view(for: d), compactionThreshold: 2)
        sync._guessesPublishedContext = guessesHubContext
        sync._readsPastGaps = readsPastGaps
        do { try sync.synchronize(devices[d].store) } catch {
            violations.append("step \(step): \(devices[d].id) could not sync through the folder: \(error)")
        }
        for file in folder.takeWrittenFiles() {
            for reader in devices.indices where reader != file.writer { inFlight.append(.arrival(path: file.path, reader: reader)) }
        }
    }

    private mutating func encode(_ message: SyncMessage) -> [UInt8] {
        do { return try message.encoded() } catch {
            violations.append("step \(step): a message could not be encoded: \(error)")
            return []
        }
    }

    public var debugLog = false
    private mutating func deliver(_ message: Message) {
        if debugLog {
            switch message {
            case .request(let d, let bytes): print("-> hub from d\(d): \((try? SyncMessage(encoded: bytes)).map { "\($0)" } ?? "?")")
            case .answer(let d, let bytes): print("<- d\(d): \((try? SyncMessage(encoded: bytes)).map { "\($0)" } ?? "?")")
            default: break
            }
        }
        switch message {
        case .request(let d, let bytes):
            guard let request = try? SyncMessage(encoded: bytes) else {
                return violations.append("step \(step): the hub got a request that does not decode")
            }
            var compensations: [HubCompensation] = []
            guard let answer = try? hub.receive(request, nowMilliseconds: now, compensations: &compensations) else {
                return violations.append("step \(step): the hub refused a request")
            }
            self.compensations += compensations.count
            if case .reply(let reply) = answer {
                if reply.kind == .fullState { fullStateReplies += 1 }
                if reply.relativeTo != nil { relativeReplies += 1 }
                if reply.keys != .all || (reply.relativeTo == nil && reply.delta.context != hub.state(of: reply.account).context) { pagedReplies += 1 }
            }
            if case .upToDate = answer { upToDateAnswers += 1 }
            for compensation in compensations {
                for index in writes.indices where writes[index].account == compensation.account
                    && compensation.superseded.contains(writes[index].dot) {
                    writes[index].compensated = true
                }
            }
            inFlight.append(.answer(to: d, encode(answer)))
        case .arrival(let path, let reader):
            guard folder.deliver(path, to: reader) else { return filesNeverDelivered += 1 }
            let key = Array(path.dropLast()) + ["\(reader)"]
            if let latest = latestDelivered[key], latest > path.last! { filesOutOfOrder += 1 } else { latestDelivered[key] = path.last! }
        case .answer(let d, let bytes), .gossip(let d, let bytes):
            let receipt: SyncReceipt
            do { receipt = try devices[d].store.receive(bytes) } catch {
                return violations.append("step \(step): \(devices[d].id) could not take a message: \(error)")
            }
            if let (peer, answer) = receipt.answer, let sender = devices.firstIndex(where: { $0.id == peer }) {
                inFlight.append(.gossip(to: sender, encode(answer)))
            }
        }
    }

    // MARK: Operations

    public mutating func run(_ operation: SyncOperation) {
        switch operation {
        case .set(let d, let key, let length):
            let value = Value.string(devices[d].store.account.rawValue + ":" + String(repeating: "v", count: length))
            write(value, forKey: key, on: d)
        case .remove(let d, let key):
            write(nil, forKey: key, on: d)
        case .push(let d, let peer):
            switch topology {
            case .hub: inFlight.append(requestMessage(for: d))
            case .mesh: if peer != d { inFlight.append(gossip(from: d, to: peer)) }
            case .folder: syncThroughFolder(d)
            }
        case .deliver(let m):
            guard !inFlight.isEmpty else { break }
            // A file-sync service tends to carry the newest files first: in the folder
            // topology deliveries count from the newest, so files arrive out of order and old
            // ones are often compacted away before they arrive.
            let index = topology == .folder ? inFlight.count - 1 - m % inFlight.count : m % inFlight.count
            deliver(inFlight.remove(at: index))
        case .duplicate(let m):
            guard !inFlight.isEmpty else { break }
            inFlight.append(inFlight[m % inFlight.count])
        case .drop(let m):
            guard !inFlight.isEmpty else { break }
            inFlight.remove(at: m % inFlight.count)
        case .tick(let ms):
            now += ms
        case .switchAccount(let d):
            let next: AccountID = devices[d].store.account == "A" ? "B" : "A"
            switchAccount(d, to: next)
        case .backupHub:
            backups.append(hub)
        case .restoreHub(let b):
            guard !backups.isEmpty else { break }
            // A hub restarted from an older copy of its storage.
            do { hub = try backups[backups.count - 1 - b % backups.count].reloadedFromStorage(incarnationsFrom: UInt64(restores + 1) * 1_000) } catch {
                violations.append("step \(step): the hub's backup could not be restored: \(error)")
            }
            restores += 1
        }
        checkInvariants()
    }

    private mutating func write(_ value: Value?, forKey key: String, on d: Int) {
        let device = devices[d]
        device.clock.set(milliseconds: now + device.skewMilliseconds)
        let before = device.store.usage
        let siblingsBefore = device.store.siblings(forKey: key)
        // The store checks the quota (and, over it, refuses writes that grow usage).
        guard (try? device.store.setValue(value, forKey: key)) != nil else { return }
        // The soft quota: a replica over it accepts no write that grows usage.
        let after = device.store.usage
        if !SyncHistory.quota.admits(before) && (after.keyCount > before.keyCount || after.valueBytes > before.valueBytes) {
            violations.append("step \(step): d\(d) accepted a write that grows usage while over the quota")
        }
        guard let written = device.store.siblings(forKey: key).first(where: { $0.dot.replica == device.id && !siblingsBefore.contains($0) })
        else { return }
        writes.append(Write(account: device.store.account, device: d, key: key, dot: written.dot, value: value,
                            context: device.store.replicatedState.context))
    }

    private mutating func switchAccount(_ d: Int, to account: AccountID) {
        let store = devices[d].store
        accountSwitches += 1
        let carried = store.replicatedState
        do { try store.switchAccount(to: account) } catch {
            return violations.append("step \(step): \(devices[d].id) could not switch to \(account): \(error)")
        }
        devices[d].accounts.insert(account)
        if leaksAcrossAccounts { _ = try? store.merge(carried.asDelta) }
    }

    // MARK: Checking

    private mutating func checkInvariants() {
        for account in Self.accounts {
            let state = hub.state(of: account)
            if !SyncHistory.quota.admits(state.usage) {
                violations.append("step \(step): the hub's state of \(account) is over the quota: \(state.usage)")
            }
            if let leak = foreignValue(in: state, account: account) {
                violations.append("step \(step): the hub's state of \(account) holds \(leak)")
            }
        }
        for device in devices {
            let account = device.store.account
            if let leak = foreignValue(in: device.store.replicatedState, account: account) {
                violations.append("step \(step): \(device.id) on \(account) holds \(leak)")
            }
        }
    }

    private func foreignValue(in state: ReplicatedMap, account: AccountID) -> String? {
        for siblings in state.entries.values {
            for sibling in siblings {
                if case .string(let text)? = sibling.value, !text.hasPrefix(account.rawValue + ":") { return "\"\(text)\"" }
            }
        }
        return nil
    }

    // MARK: Healing

    /// Heals everything: no more loss, every device visits every account it has data of
    /// and exchanges with the hub until nothing changes.
    ///
    /// A device visits its other accounts twice: first, and again once the devices on them
    /// have exchanged until nothing changed. What a device knows of an account reaches that
    /// account's hub only while it is on it, and some of it the hub can take only after
    /// others have exchanged: a write the device saw replaced, which a hub restored from an
    /// older copy lost and its author brings back, is dropped by the device's repair once
    /// the hub holds it again.
    public mutating func heal() {
        inFlight.removeAll()
        if topology != .hub { return healMesh() }
        let visitsAgain = devices.contains { $0.accounts.count > 1 }
        for _ in 0..<(visitsAgain ? 2 : 1) {
            visitOtherAccounts()
            // A device back from a visit starts from nothing the hub reported (pages of its
            // whole state, then a repair), which the quiet check below does not see: it
            // compares states only.
            for _ in 0..<healRounds {
                for d in devices.indices { exchange(d) }
            }
            // Until nothing changes: a round that changed no device's state and nothing the hub
            // stores (a frontier that moved in the last round reaches the devices that polled
            // before it moved).
            quiet = false
            for _ in 0..<healRounds * 4 {
                let before = snapshot()
                for d in devices.indices { exchange(d) }
                if snapshot() == before { quiet = true; break }
            }
        }
        checkInvariants()
    }

    /// Every device exchanges with the hub on each account it has data of other than its
    /// own, then goes back to its own.
    private mutating func visitOtherAccounts() {
        for d in devices.indices {
            let home = devices[d].store.account
            for account in devices[d].accounts.sorted() where account != home {
                switchAccount(d, to: account)
                // Long enough to take a full state and repair the hub with its whole state.
                for _ in 0..<max(6, healRounds) { exchange(d) }
            }
            switchAccount(d, to: home)
        }
    }

    /// Heals the mesh: for each account, every device with data of it gossips with every
    /// other, push-pull, twice round. Heals the folder: every file reaches every device,
    /// and every device with data of the account syncs, three times round.
    private mutating func healMesh() {
        let homes = devices.map(\.store.account)
        for account in Self.accounts {
            let holders = devices.indices.filter { devices[$0].accounts.contains(account) }
            guard !holders.isEmpty else { continue }
            for d in holders { switchAccount(d, to: account) }
            if topology == .folder {
                for _ in 0..<3 {
                    for d in holders {
                        folder.deliverEverything(to: devices.indices)
                        syncThroughFolder(d)
                        inFlight.removeAll()
                    }
                }
            } else {
                for _ in 0..<2 {
                    for d in holders {
                        for peer in holders where peer != d {
                            deliver(gossip(from: d, to: peer))
                            while let reply = inFlight.popLast() { deliver(reply) }
                        }
                    }
                }
            }
            let converged = devices[holders[0]].store.replicatedState
            meshStates[account] = converged
            for d in holders where devices[d].store.replicatedState != converged {
                violations.append("after healing, \(devices[d].id) differs from \(devices[holders[0]].id) in \(account)")
            }
        }
        for d in devices.indices { switchAccount(d, to: homes[d]) }
        checkInvariants()
    }

    /// The converged state of `account`: the hub's, or in the mesh and the folder the
    /// devices' common one.
    public func convergedState(of account: AccountID) -> ReplicatedMap {
        topology == .hub ? hub.state(of: account) : meshStates[account] ?? ReplicatedMap()
    }

    /// What the hub stores of every account and every device's state.
    private func snapshot() -> [[UInt8]] {
        Self.accounts.map { hub.encodedState(of: $0) ?? [] } + devices.map { $0.store.replicatedState.encoded() }
    }

    private mutating func exchange(_ d: Int) {
        deliver(requestMessage(for: d))
        deliver(inFlight.removeLast())
    }

    /// A write lost for good once healed: a value write, not superseded by a write that saw
    /// it (as recorded when it was made, apart from what any replica holds) nor reported as
    /// compensated by the hub, that the converged state lacks; `nil` if there is none.
    public func lostWrite() -> String? {
        if let violation = violations.first { return violation }
        for write in writes where write.value != nil && !write.compensated {
            let final = convergedState(of: write.account)
            if final.siblings(forKey: write.key).contains(where: { $0.dot == write.dot }) { continue }
            let superseded = writes.contains { other in
                other.account == write.account && other.key == write.key && other.dot != write.dot && other.context.contains(write.dot)
            }
            if !superseded {
                return "write \(write.dot) of \(write.key) in \(write.account) is neither visible, superseded nor reported as compensated"
            }
        }
        return nil
    }

    /// A write visible once healed although a recorded write saw it and replaced it (a
    /// removed or overwritten value brought back), judged by the contexts recorded when the
    /// writes were made, not by what any replica reports; `nil` if there is none. The hub's
    /// state and every device's state on its account are checked.
    public func resurrectedWrite() -> String? {
        var holders: [(name: String, account: AccountID, state: ReplicatedMap)] = []
        if topology == .hub {
            for account in Self.accounts { holders.append(("the hub", account, hub.state(of: account))) }
        }
        for device in devices { holders.append((device.id.rawValue, device.store.account, device.store.replicatedState)) }
        for holder in holders {
            for key in holder.state.entries.keys.sortedByUTF8() {
                for sibling in holder.state.siblings(forKey: key) where !sibling.isTombstone {
                    if let later = writes.first(where: { $0.account == holder.account && $0.key == key && $0.dot != sibling.dot
                                                          && $0.context.contains(sibling.dot) }) {
                        return "\(holder.name) on \(holder.account) holds \(sibling.dot) of \(key), which \(later.dot) (\(later.value == nil ? "a removal" : "a write")) replaced"
                    }
                }
            }
        }
        return nil
    }

    /// What must hold once healed; `nil` if everything does.
    ///
    /// - Parameter lostHubWrites: Whether the hub may have been restored from an older
    ///   copy: a device's context may then cover writes of the hub the copy lost and no
    ///   replica holds, which the hub never believes a device has seen (nothing else may
    ///   differ).
    public func convergenceFailure(policies: [MergePolicy], lostHubWrites: Bool = false) -> String? {
        if let violation = violations.first { return violation }
        for device in devices {
            let state = device.store.replicatedState
            let hubState = convergedState(of: device.store.account)
            if lostHubWrites ? !Self.equalButForLostHubWrites(state, hubState, hub: hub.hubID) : state != hubState {
                return "\(device.id) on \(device.store.account) has \(state.entries.count) keys, ctx \(state.context); the hub has \(hubState.entries.count) keys, ctx \(hubState.context); "
                    + Self.difference(state, hubState)
            }
            if topology == .hub && !SyncHistory.quota.admits(state.usage) { return "\(device.id) is over the quota after convergence: \(state.usage)" }
            for policy in policies where visibleValues(of: state, policy: policy) != visibleValues(of: hubState, policy: policy) {
                return "\(device.id) reads differently from the hub under \(policy.name)"
            }
        }
        for write in writes where write.value != nil && !write.compensated {
            let final = convergedState(of: write.account)
            if final.siblings(forKey: write.key).contains(where: { $0.dot == write.dot }) { continue }
            let superseded = writes.contains { other in
                other.account == write.account && other.key == write.key && other.dot != write.dot && other.context.contains(write.dot)
            }
            if !superseded {
                return "write \(write.dot) of \(write.key) in \(write.account) is neither visible, superseded nor reported as compensated"
            }
        }
        return nil
    }

    /// Whether `device` and `hub` hold the same siblings and contexts, but for counters of
    /// the hub's own writer IDs the device's context has beyond the hub's.
    static func equalButForLostHubWrites(_ device: ReplicatedMap, _ hub: ReplicatedMap, hub hubID: ReplicaID) -> Bool {
        guard device.entries == hub.entries else { return false }
        let replicas = Set(device.context.sortedEntries.map(\.replica)).union(hub.context.sortedEntries.map(\.replica))
        return replicas.allSatisfy { replica in
            device.context[replica] == hub.context[replica] || (replica.base == hubID.base && device.context[replica] > hub.context[replica])
        }
    }

    /// What differs between a device's state and the hub's, key by key in byte order (at
    /// most three keys), for a failure message that shows more than two equal summaries.
    static func difference(_ device: ReplicatedMap, _ hub: ReplicatedMap) -> String {
        var parts: [String] = []
        if device.context != hub.context { parts.append("contexts differ") }
        let keys = Set(device.entries.keys).union(hub.entries.keys).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        for key in keys where device.siblings(forKey: key) != hub.siblings(forKey: key) {
            let ours = device.siblings(forKey: key).map(\.description).joined(separator: ", ")
            let theirs = hub.siblings(forKey: key).map(\.description).joined(separator: ", ")
            parts.append("\"\(key)\": device [\(ours)], hub [\(theirs)]")
            if parts.count >= 3 { break }
        }
        return parts.isEmpty ? "they differ in no key or context (another field differs)" : parts.joined(separator: "; ")
    }
}
