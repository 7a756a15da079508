import Converge

/// What a hub keeps durably: each account's encoded state, with a revision, and the
/// accounts' bearer tokens (as hashes). The SQLite implementation is the embedded default;
/// a shared database (PostgreSQL) lets several hub processes serve the same accounts.
///
/// The service runs every exchange through ``update(_:known:_:)``: the store tells it
/// whether its copy in memory is still the stored one (same revision and same checksum, so
/// a database rolled back and written again is not mistaken for the copy in memory), and
/// writes the new state. Writes are
/// compare-and-swap on the revision, so a process that lost a race learns it and redoes the
/// exchange on the newer state instead of overwriting it; a shared store also holds the
/// account for the exchange, so exchanges of one account run one at a time across
/// processes. Every write is durable when it returns: the hub answers a device only after that.
public protocol HubStateStore: Sendable {
    /// Runs one exchange of `account` and writes the state it returns, if any.
    ///
    /// `exchange` is handed ``HubStoredCopy/unchanged`` if the stored version is still
    /// `known` (the caller's copy in memory is current; `nil`: the caller knows of no stored
    /// copy), or the stored copy otherwise; it returns its result and the state to write (`nil`: nothing to write).
    /// It may run more than once, each time on a newer stored copy, if another process
    /// wrote the account meanwhile.
    ///
    /// - Returns: The exchange's result, and the version of the stored copy it was
    ///   computed from or wrote (`nil`: none is stored).
    /// - Throws: What `exchange` throws, ``HubError/storage(_:)`` if the store fails
    ///   (nothing was written), ``HubError/contention(_:)`` if other processes kept
    ///   writing the account first.
    func update<Result>(_ account: AccountID, known: HubStoredVersion?,
                        _ exchange: (HubStoredCopy) throws(HubError) -> (result: Result, write: [UInt8]?))
        throws(HubError) -> (result: Result, version: HubStoredVersion?)

    /// The version of `account`'s stored copy, or `nil` if none is stored.
    func storedVersion(of account: AccountID) throws(HubError) -> HubStoredVersion?

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
    /// Runs the exchange over ``storedVersion(of:)``, ``loadAccount(_:)`` and the
    /// compare-and-swap of ``storeAccount(_:state:replacing:)``, redoing it on the newer
    /// copy when another process wrote first (at most four times). Holds nothing across
    /// processes: enough where one process serves the store, correct (but retried) where
    /// several do.
    public func update<Result>(_ account: AccountID, known: HubStoredVersion?,
                               _ exchange: (HubStoredCopy) throws(HubError) -> (result: Result, write: [UInt8]?))
        throws(HubError) -> (result: Result, version: HubStoredVersion?) {
        var reload = false
        for _ in 0..<4 {
            let copy: HubStoredCopy, base: HubStoredVersion?
            if !reload, try storedVersion(of: account) == known {
                (copy, base) = (.unchanged, known)
            } else {
                let stored = try loadAccount(account)
                (copy, base) = (.changed(stored), stored?.version)
            }
            let (result, write) = try exchange(copy)
            guard let write else { return (result, base) }
            if let revision = try storeAccount(account, state: write, replacing: base?.revision ?? 0) {
                return (result, HubStoredVersion(revision: revision, checksum: SHA256.digest(write)))
            }
            reload = true   // lost a race: load the newer copy
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

/// Which stored copy of an account a hub holds: its revision and the SHA-256 of its state.
public struct HubStoredVersion: Hashable, Sendable {
    /// Increases by one with every write of the account.
    public var revision: UInt64
    /// The SHA-256 of the stored state.
    public var checksum: [UInt8]

    /// A version: `revision`, with the state whose SHA-256 is `checksum`.
    public init(revision: UInt64, checksum: [UInt8]) {
        self.revision = revision
        self.checksum = checksum
    }
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

    /// The version of this copy (its checksum computed from the state).
    public var version: HubStoredVersion { HubStoredVersion(revision: revision, checksum: SHA256.digest(state)) }
}
