import Converge

/// The errors of the hub service, each with the data that explains it.
public enum HubError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The hub's storage failed (the data says how and where); nothing was acknowledged.
    case storage(StorageFailure)
    /// What the storage holds for an account cannot be read back (damaged, or written by a
    /// newer version); the account is refused rather than reset.
    case unreadableAccount(AccountID, MalformedInput)
    /// Another hub process changed the account between our read and our write, several
    /// times in a row.
    case contention(AccountID)
    /// The system's cryptographic random generator failed.
    case randomUnavailable
    /// The hub machine refused a push (a device claiming the hub's replica ID, a write
    /// stamped too far ahead of the hub's clock); nothing changed.
    case refused(MalformedInput)

    public var description: String {
        switch self {
        case .storage(let failure): "storage error: \(failure)"
        case .unreadableAccount(let account, let input): "the stored state of account \(account) cannot be read: \(input)"
        case .contention(let account): "account \(account) was changed by another hub process while this one wrote it"
        case .randomUnavailable: "the system's random generator failed: no token was made"
        case .refused(let input): "the push was refused: \(input)"
        }
    }
}

extension HubError {
    /// The hub error for a Converge error raised by storage or decoding.
    init(_ error: ConvergeError, account: AccountID? = nil) {
        switch error {
        case .storage(let failure): self = .storage(failure)
        case .malformed(let input): self = .unreadableAccount(account ?? .default, input)
        default: self = .storage(StorageFailure(kind: .other, path: "-", operation: .read, detail: "\(error)"))
        }
    }
}
