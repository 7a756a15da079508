import Synchronization

/// An authoritative hub in this process, which stores attach to: the way to unit-test
/// multi-device behaviour without a network.
///
/// ```swift
/// let hub = InMemoryHub()
/// let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub)
/// let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub)
/// phone.set(["Surrey"], forKey: "FavouriteCounties")
/// _ = phone.synchronize()    // pushes to the hub and pulls from it
/// _ = tablet.synchronize()   // pulls; posts didChangeExternallyNotification on tablet
/// ```
///
/// Every exchange goes through the binary wire format, so in-process tests exercise the
/// same encoding a network transport would. Set ``isReachable`` to `false` to model a
/// device that is offline: `synchronize()` then returns `false` and changes nothing.
public final class InMemoryHub: Sendable {
    private let machine: Mutex<HubSyncMachine>
    private let reachable = Mutex(true)
    /// The hub's source of time, for retirement and compensating writes.
    public let clock: any PhysicalClock

    /// Creates a hub.
    ///
    /// - Parameters:
    ///   - quota: The quota the hub enforces; iCloud's by default.
    ///   - policies: How the hub reads a key when it must restore its previous value.
    ///   - retirementIntervalMilliseconds: How long a device may stay silent before it is
    ///     retired (30 days by default).
    ///   - clock: The hub's time source.
    public init(quota: Quota = .iCloud, policies: MergePolicies = MergePolicies(),
                retirementIntervalMilliseconds: UInt64 = 30 * 24 * 3_600 * 1_000,
                clock: any PhysicalClock = SystemClock()) {
        machine = Mutex(HubSyncMachine(quota: quota, policies: policies, retirementIntervalMilliseconds: retirementIntervalMilliseconds))
        self.clock = clock
    }

    /// The quota the hub enforces.
    public var quota: Quota { machine.withLock { $0.quota } }

    /// Whether devices can reach the hub.
    public var isReachable: Bool {
        get { reachable.withLock { $0 } }
        set { reachable.withLock { $0 = newValue } }
    }

    /// Handles one encoded push or poll and returns the encoded answer.
    ///
    /// - Throws: ``ConvergeError/unreachable(_:)`` if the hub is unreachable;
    ///   ``ConvergeError/malformed(_:)`` for bytes that are not a push or a poll (the hub
    ///   is then unchanged).
    public func exchange(_ request: [UInt8]) throws(ConvergeError) -> [UInt8] {
        guard isReachable else { throw .unreachable("the in-memory hub (isReachable is false)") }
        let message = try SyncMessage(encoded: request)
        let now = clock.nowMilliseconds()
        let answer = machine.withLock { machine -> SyncMessage? in
            var compensations: [HubCompensation] = []
            return machine.receive(message, nowMilliseconds: now, compensations: &compensations)
        }
        guard let answer else { throw .malformed(.unexpectedMessage, "the hub accepts only pushes and polls") }
        return try answer.encoded()
    }

    /// Retires devices silent for longer than the retirement interval.
    public func retireSilentDevices() {
        let now = clock.nowMilliseconds()
        machine.withLock { _ = $0.retireSilentMembers(nowMilliseconds: now) }
    }

    /// The hub's replicated state of `account`.
    public func state(of account: AccountID = .default) -> ReplicatedMap {
        machine.withLock { $0.state(of: account) }
    }

    /// The devices currently in `account`'s membership.
    public func members(of account: AccountID = .default) -> [ReplicaID] {
        machine.withLock { $0.members(of: account) }
    }

    /// The retired devices of `account`.
    public func retiredMembers(of account: AccountID = .default) -> [ReplicaID] {
        machine.withLock { $0.retiredMembers(of: account) }
    }
}

/// A store's link to an ``InMemoryHub``.
final class HubConnection: SyncAgent {
    let hub: InMemoryHub
    let machine: Mutex<DeviceSyncMachine>

    init(hub: InMemoryHub, device: ReplicaID, account: AccountID) {
        self.hub = hub
        machine = Mutex(DeviceSyncMachine(device: device, account: account))
    }

    func synchronize(_ store: ReplicatedKeyValueStore) -> Bool {
        // The connection's lock serialises exchanges; the store's own lock is never held
        // while the hub is called.
        machine.withLock { machine in
            do {
                let request = try machine.request(from: store.replicatedState).encoded()
                switch try SyncMessage(encoded: try hub.exchange(request)) {
                case .reply(let reply):
                    guard let accepted = machine.receive(reply) else { return false }
                    try store.apply(accepted)
                    return true
                case .upToDate(let account):
                    return account == machine.account
                default:
                    return false
                }
            } catch {
                return false
            }
        }
    }

    var account: AccountID { machine.withLock { $0.account } }

    func switchAccount(to account: AccountID) {
        machine.withLock { $0.switchAccount(to: account) }
    }
}
