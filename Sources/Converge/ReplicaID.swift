/// The stable identifier of one replica: one device's copy of one store, or a hub.
///
/// Replica IDs are totally ordered by their UTF-8 bytes, which gives every replica the
/// same deterministic tie-break. They are restricted to ASCII letters, digits and
/// `. _ : @ -`, between 1 and ``maximumLengthBytes`` bytes, not starting with ".": that
/// keeps them free of Unicode normalisation ambiguities (two spellings that Swift's
/// `String` considers equal but that encode differently) and safe to use as file names
/// (never hidden, never `.` or `..`). The writer ID of a
/// replica's later incarnation adds `~n` (``incarnation(_:)``).
///
/// A string literal is a replica ID (`"phone"`). Text held in a `String` (a setting, a
/// host name) becomes one with `try ReplicaID(validating: text)`, which throws
/// ``ConvergeError/invalidReplicaID(_:)`` naming the text, or `ReplicaID(text)`, which
/// returns `nil`.
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

    /// Whether `text` is a valid replica ID: a base ID, or a writer ID of a later
    /// incarnation (see ``incarnation(_:)``).
    public static func isValid(_ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable(isValid(utf8:)) ?? Array(text.utf8).withUnsafeBufferPointer(isValid(utf8:))
    }

    /// Whether `bytes` spell a valid replica ID (see ``isValid(_:)``). Every byte of one is
    /// ASCII, so bytes that pass are valid UTF-8 too.
    static func isValid(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // Most IDs are base IDs, which have no `~`: one scan of their bytes.
        if isValidBase(utf8: bytes) { return true }
        guard let tilde = bytes.lastIndex(of: UInt8(ascii: "~")) else { return false }
        let suffix = UnsafeBufferPointer(rebasing: bytes[(tilde + 1)...])
        guard isValidBase(utf8: UnsafeBufferPointer(rebasing: bytes[..<tilde])), (1...20).contains(suffix.count),
              suffix.first != UInt8(ascii: "0") else { return false }
        var number: UInt64 = 0
        for digit in suffix {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return false }
            let (tens, overflowed) = number.multipliedReportingOverflow(by: 10)
            let (sum, overflowedAgain) = tens.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !overflowed && !overflowedAgain else { return false }
            number = sum
        }
        return number >= 2
    }

    /// The replica ID `bytes` spell, or `nil` if they spell none (see ``isValid(_:)``):
    /// one scan of the bytes checks both the ID and its UTF-8, where decoding a string
    /// first and checking it as an ID takes three (a hub reads every ID of every push).
    package init?(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        guard Self.isValid(utf8: bytes) else { return nil }
        rawValue = String(decoding: bytes, as: UTF8.self)
    }

    /// The writer ID of `incarnation` of this replica: its dots after it found that its
    /// counters had been reused (a store restored from a backup, copied or recreated).
    /// Incarnation 1 writes as the replica ID itself; incarnation *n* ≥ 2 as `ID~n`, which
    /// no replica ID chosen by a user can spell (a base ID has no `~`).
    ///
    /// - Precondition: This is a base ID (``isBase``) and `incarnation` ≥ 1.
    public func incarnation(_ incarnation: UInt64) -> ReplicaID {
        precondition(isBase && incarnation >= 1, "incarnation \(incarnation) of \(rawValue)")
        return incarnation == 1 ? self : ReplicaID(uncheckedRawValue: rawValue + "~" + String(incarnation))
    }

    /// The incarnation this writer ID writes for (1 for a base ID, *n* for `ID~n`).
    package var incarnationNumber: UInt64 {
        guard let tilde = Self.lastTilde(in: rawValue) else { return 1 }
        return UInt64(rawValue[rawValue.utf8.index(after: tilde)...]) ?? 1
    }

    /// Whether this is a replica ID a user chose (no `~n` incarnation suffix).
    public var isBase: Bool { Self.lastTilde(in: rawValue) == nil }

    /// The replica ID this writer ID is an incarnation of (itself for a base ID).
    public var base: ReplicaID {
        guard let tilde = Self.lastTilde(in: rawValue) else { return self }
        return ReplicaID(uncheckedRawValue: String(rawValue[..<tilde]))
    }

    /// Whether this is `base` or an incarnation of it (`base~n`): what `self.base == base`
    /// says, without building this ID's base. A hub asks it of every replica of a push's
    /// context.
    package func isIncarnation(of base: ReplicaID) -> Bool {
        let tilde = UInt8(ascii: "~")
        let answer = rawValue.utf8.withContiguousStorageIfAvailable { mine in
            base.rawValue.utf8.withContiguousStorageIfAvailable { theirs -> Bool in
                // A base never holds a `~`, so no ID is an incarnation of one that does.
                guard mine.count >= theirs.count, !theirs.contains(tilde),
                      mine.prefix(theirs.count).elementsEqual(theirs) else { return false }
                return mine.count == theirs.count || (mine[theirs.count] == tilde && !mine[(theirs.count + 1)...].contains(tilde))
            }
        }
        return (answer ?? nil) ?? (self.base == base)
    }

    /// Where the last `~` of `text` is, if it has one. A scan of the bytes where they are
    /// contiguous (always, but for a string bridged from elsewhere): stepping through the
    /// UTF-8 view's indices costs several times more, and a hub asks this of every replica
    /// a push names.
    private static func lastTilde(in text: String) -> String.Index? {
        let tilde = UInt8(ascii: "~")
        guard let offset = text.utf8.withContiguousStorageIfAvailable({ $0.lastIndex(of: tilde) }) else {
            return text.utf8.lastIndex(of: tilde)
        }
        return offset.map { text.utf8.index(text.utf8.startIndex, offsetBy: $0) }
    }

    private init(uncheckedRawValue: String) { rawValue = uncheckedRawValue }

    private static func isValidBase(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.count <= maximumLengthBytes && bytes.first != UInt8(ascii: ".") && bytes.allSatisfy(isAllowed)
    }

    /// Whether `byte` may appear in a base ID.
    @inline(__always)
    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    public static func < (lhs: ReplicaID, rhs: ReplicaID) -> Bool {
        // Replica IDs are ASCII, which `String` compares by its bytes (ASCII text is in
        // normal form already), through a path several times faster than walking the UTF-8
        // views: version vectors keep their replicas in this order and search it at every lookup.
        lhs.rawValue < rhs.rawValue
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
