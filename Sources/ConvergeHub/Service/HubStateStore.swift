import Converge

/// What a hub keeps durably: each account's encoded state, with a revision, and the
/// accounts' bearer tokens (as hashes). The SQLite implementation is the embedded default;
/// a shared database (PostgreSQL) lets several hub processes serve the same accounts.
///
/// Writes are compare-and-swap on the revision, so a process that lost a race learns it
/// and redoes the exchange on the newer state instead of overwriting it. Every write is
/// durable when it returns: the hub answers a device only after that.
public protocol HubStateStore: Sendable {
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
