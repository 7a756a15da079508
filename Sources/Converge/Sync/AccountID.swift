/// The account a store's synced domain belongs to. Nothing of one account ever reaches
/// another account's replicas: the hub keeps one state per account, and messages name
/// the account they belong to.
public struct AccountID: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The longest account ID accepted, in UTF-8 bytes.
    public static let maximumLengthBytes = 256

    /// The account's name, as given.
    public let rawValue: String

    /// Creates an account ID; `nil` if empty or longer than ``maximumLengthBytes``.
    public init?(_ rawValue: String) {
        guard !rawValue.isEmpty, rawValue.utf8.count <= Self.maximumLengthBytes else { return nil }
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        guard let account = AccountID(value) else { preconditionFailure("invalid account ID literal \"\(value)\"") }
        self = account
    }

    /// The account of stores that do not name one.
    public static let `default`: AccountID = "default"

    public static func < (lhs: AccountID, rhs: AccountID) -> Bool {
        lhs.rawValue.precedesInUTF8Order(rhs.rawValue)
    }

    public var description: String { rawValue }
}
