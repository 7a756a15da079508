import Converge

/// What a hub keeps durably: each account's encoded state, with a revision, and the
/// accounts' bearer tokens (as hashes). The SQLite implementation is the embedded default;
/// a shared database (PostgreSQL) lets several hub processes serve the same accounts.
///
/// The service runs every exchange through ``update(_:knownRevision:_:)``: the store tells it
/// whether its copy in memory is still the stored one, and writes the new state. Writes are
/// compare-and-swap on the revision, so a process that lost a race learns it and redoes the
/// exchange on the newer state instead of overwriting it; a shared store also holds the
/// account for the exchange, so exchanges of one account run one at a time across
/// processes. Every write is durable when it returns: the hub answers a device only after that.
public protocol HubStateStore: Sendable {
    /// Runs one exchange of `account` and writes the state it returns, if any.
    ///
    /// `exchange` is handed ``HubStoredCopy/unchanged`` if the stored revision is still
    /// `knownRevision` (the caller's copy in memory is current), or the stored copy
    /// otherwise; it returns its result and the state to write (`nil`: nothing to write).
    /// It may run more than once, each time on a newer stored copy, if another process
    /// wrote the account meanwhile.
    ///
    /// - Returns: The exchange's result, and the revision of the stored copy it was
    ///   computed from or wrote.
    /// - Throws: What `exchange` throws, ``HubError/storage(_:)`` if the store fails
    ///   (nothing was written), ``HubError/contention(_:)`` if other processes kept
    ///   writing the account first.
    func update<Result>(_ account: AccountID, knownRevision: UInt64,
                        _ exchange: (HubStoredCopy) throws(HubError) -> (result: Result, write: [UInt8]?))
        throws(HubError) -> (result: Result, revision: UInt64)

    /// The revision of `account`'s stored copy (0: none stored).
    func storedRevision(of account: AccountID) throws(HubError) -> UInt64

    /// The stored state of `account`, or `nil` if the hub never stored one.
    func loadAccount(_ account: AccountID) throws(HubError) -> HubStoredAccount?

    /// Stores `state` as `account`'s if its revision is still `expectedRevision` (0: not
    /// stored yet), durably, in one transaction.
    ///
    /// - Returns: The new revision, or `nil` if the stored revision was not the expected
    ///   one (nothing was written).
    func storeAccount(_ account: AccountID, state: [UInt8], replacing expectedRevision: UInt64) throws(HubError) -> UInt64?

    /// Every account stored, in order.
    func accountIDs() throws(HubError) -> [AccountID]

    /// Records a token's hash as belonging to `account`.
    func addToken(hash: [UInt8], account: AccountID, createdMilliseconds: UInt64) throws(HubError)

    /// The account whose token has this hash, or `nil`.
    func account(forTokenHash hash: [UInt8]) throws(HubError) -> AccountID?
}

extension HubStateStore {
    /// Runs the exchange over ``storedRevision(of:)``, ``loadAccount(_:)`` and the
    /// compare-and-swap of ``storeAccount(_:state:replacing:)``, redoing it on the newer
    /// copy when another process wrote first (at most four times). Holds nothing across
    /// processes: enough where one process serves the store, correct (but retried) where
    /// several do.
    public func update<Result>(_ account: AccountID, knownRevision: UInt64,
                               _ exchange: (HubStoredCopy) throws(HubError) -> (result: Result, write: [UInt8]?))
        throws(HubError) -> (result: Result, revision: UInt64) {
        var known = knownRevision
        for _ in 0..<4 {
            let copy: HubStoredCopy, base: UInt64
            if try storedRevision(of: account) == known {
                (copy, base) = (.unchanged, known)
            } else {
                let stored = try loadAccount(account)
                (copy, base) = (.changed(stored), stored?.revision ?? 0)
            }
            let (result, write) = try exchange(copy)
            guard let write else { return (result, base) }
            if let revision = try storeAccount(account, state: write, replacing: base) { return (result, revision) }
            known = .max   // lost a race: load the newer copy
        }
        throw .contention(account)
    }
}

/// Whether an account's stored copy is still the one an exchange already holds.
public enum HubStoredCopy: Sendable {
    /// The stored revision is the one the caller knows: its copy in memory is current.
    case unchanged
    /// The stored copy is another (another process wrote it, or the caller has none in
    /// memory): the stored account, or `nil` if none is stored.
    case changed(HubStoredAccount?)
}

/// An account's state as stored.
public struct HubStoredAccount: Hashable, Sendable {
    /// Increases by one with every write of the account.
    public var revision: UInt64
    /// The encoded state (`HubSyncMachine`'s account encoding).
    public var state: [UInt8]

    /// A stored account: its state's encoding at `revision`.
    public init(revision: UInt64, state: [UInt8]) {
        self.revision = revision
        self.state = state
    }
}
