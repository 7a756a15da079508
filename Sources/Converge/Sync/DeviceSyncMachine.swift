/// The device side of the hub protocol, as a pure state machine.
///
/// It remembers only what the hub reported (its context), so every push carries exactly
/// what the hub may lack: never computed from a guessed context. Lost, duplicated and
/// reordered messages are harmless: deltas are idempotent, and the next push repairs
/// what a lost one missed.
public struct DeviceSyncMachine: Hashable, Sendable {
    /// This device's replica ID.
    public let device: ReplicaID
    /// The account the device syncs.
    public private(set) var account: AccountID
    /// The union of the contexts the hub has reported; the hub's context only grows, so
    /// this is the latest one seen.
    public private(set) var hubContext = VersionVector()
    /// The latest stable frontier the hub announced.
    public private(set) var stableFrontier = VersionVector()

    public init(device: ReplicaID, account: AccountID = .default) {
        self.device = device
        self.account = account
    }

    /// The push for the device's current state.
    ///
    /// - Complexity: O(*n*) in the siblings of `state`.
    public func push(from state: ReplicatedMap) -> SyncPush {
        SyncPush(account: account, device: device, delta: state.delta(for: hubContext))
    }

    /// What to send the hub for `state`: a poll when the device holds exactly the context
    /// the hub last reported (nothing new to push), a push otherwise.
    public func request(from state: ReplicatedMap) -> SyncMessage {
        if !hubContext.isEmpty && state.context == hubContext {
            return .poll(SyncPoll(account: account, device: device, contextDigest: hubContext.digest))
        }
        return .push(push(from: state))
    }

    /// Takes a reply from the hub; returns it if the device must apply it, or `nil` for
    /// a reply of another account (which must never be applied).
    public mutating func receive(_ reply: SyncReply) -> SyncReply? {
        guard reply.account == account else { return nil }
        hubContext.formUnion(reply.delta.context)
        stableFrontier.formUnion(reply.stableFrontier)
        return reply
    }

    /// Switches to another account: forget everything the hub of the old one reported.
    public mutating func switchAccount(to newAccount: AccountID) {
        account = newAccount
        hubContext = VersionVector()
        stableFrontier = VersionVector()
    }
}
