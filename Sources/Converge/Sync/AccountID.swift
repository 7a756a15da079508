/// The account a store's synced domain belongs to. Nothing of one account ever reaches
/// another account's replicas: the hub keeps one state per account, and messages name
/// the account they belong to.
public struct AccountID: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The longest account ID accepted, in UTF-8 bytes.
    public static let maximumLengthBytes = 256

    /// The account's name, in Unicode normal form C.
    public let rawValue: String

    /// Creates an account ID; `nil` if empty, longer than ``maximumLengthBytes``, or not a
    /// name a folder can have wherever accounts become folders (a shared folder, a hub's
    /// files): starting with ".", or holding "/", a control character or NUL. Refused here,
    /// where the name is first given, rather than at the first sync.
    ///
    /// The name is kept in Unicode normal form C, so that "josé" typed composed or
    /// decomposed is one account everywhere: equal, hashed, ordered, encoded and used as a
    /// folder name the same way (Swift's `String` equality alone would call the two
    /// spellings equal while their bytes differ).
    public init?(_ rawValue: String) {
        let rawValue = ReplicatedKeyValueStore.canonicalSpelling(of: rawValue)
        let bytes = rawValue.utf8
        guard !bytes.isEmpty, bytes.count <= Self.maximumLengthBytes, bytes.first != UInt8(ascii: "."),
              !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "/") }) else { return nil }
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
