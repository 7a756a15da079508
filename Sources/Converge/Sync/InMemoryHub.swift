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
/// The hub is a ``SyncTransport`` that answers at once, so `synchronize()` exchanges
/// before it returns and `try await store.sync()` works as with any transport. Every
/// exchange goes through the binary wire format, so in-process tests exercise the same
/// encoding a network transport would. Set ``isReachable`` to `false` to model a device
/// that is offline: `synchronize()` then returns `false`, `sync()` throws
/// ``ConvergeError/unreachable(_:)``, and nothing changes.
public final class InMemoryHub: SyncTransport {
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

    /// Handles one encoded push or poll and returns the encoded answer, at once.
    ///
    /// - Throws: ``ConvergeError/unreachable(_:)`` if ``isReachable`` is `false`;
    ///   ``ConvergeError/malformed(_:)`` for bytes that are not a push or a poll, or a push
    ///   the hub refuses (``HubSyncMachine/check(_:nowMilliseconds:)``). Either
    ///   way the hub is unchanged.
    /// - Complexity: That of the hub's ``HubSyncMachine`` handling the request.
    public func exchange(_ request: [UInt8]) throws(ConvergeError) -> [UInt8] {
        guard isReachable else { throw .unreachable("the in-memory hub (isReachable is false)") }
        let message = try SyncMessage(encoded: request)
        let now = clock.nowMilliseconds()
        let answer = try machine.withLock { (machine: inout HubSyncMachine) throws(ConvergeError) -> SyncMessage in
            var compensations: [HubCompensation] = []
            return try machine.receive(message, nowMilliseconds: now, compensations: &compensations)
        }
        return try answer.encoded()
    }

    /// Answers at once: the same as ``exchange(_:)``.
    public func exchangeImmediately(_ request: [UInt8]) throws -> [UInt8]? {
        try exchange(request)
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
