/// The stable identifier of one replica: one device's copy of one store, or a hub.
///
/// Replica IDs are totally ordered by their UTF-8 bytes, which gives every replica the
/// same deterministic tie-break. They are restricted to ASCII letters, digits and
/// `. _ : @ -`, between 1 and ``maximumLengthBytes`` bytes: that keeps them free of
/// Unicode normalisation ambiguities (two spellings that Swift's `String` considers
/// equal but that encode differently) and safe to use in file names.
public struct ReplicaID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The longest replica ID accepted, in UTF-8 bytes.
    public static let maximumLengthBytes = 64

    /// The identifier's text.
    public let rawValue: String

    /// Creates a replica ID, or returns `nil` if `rawValue` is empty, longer than
    /// ``maximumLengthBytes`` or contains a character outside the allowed set.
    public init?(_ rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// Creates a replica ID or throws ``ConvergeError/invalidReplicaID(_:)``.
    public init(validating rawValue: String) throws(ConvergeError) {
        guard Self.isValid(rawValue) else { throw .invalidReplicaID(rawValue) }
        self.rawValue = rawValue
    }

    /// Whether `text` is a valid replica ID.
    public static func isValid(_ text: String) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maximumLengthBytes else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }

    public static func < (lhs: ReplicaID, rhs: ReplicaID) -> Bool {
        lhs.rawValue.precedesInUTF8Order(rhs.rawValue)
    }

    public var description: String { rawValue }
}

extension ReplicaID: ExpressibleByStringLiteral {
    /// Creates a replica ID from a literal; a literal that is not a valid ID is a
    /// programming error and traps.
    public init(stringLiteral value: String) {
        guard let id = ReplicaID(value) else {
            preconditionFailure("invalid replica ID literal \"\(value)\": use 1...64 bytes of letters, digits and . _ : @ -")
        }
        self = id
    }
}

extension ReplicaID: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = ReplicaID(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "invalid replica ID \"\(text)\""))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
