/// What was wrong with bytes that do not form a valid encoding: the data of
/// ``ConvergeError/malformed(_:)``.
///
/// Match on ``problem`` (and ``offset``, when the input was binary); ``detail`` names
/// what was being read. Decoding never repairs or guesses: malformed input is refused
/// whole and changes nothing.
public struct MalformedInput: Hashable, Sendable, CustomStringConvertible {
    /// The kind of problem. An open set, like swift-system's `Errno`: match the static
    /// members, which other modules (storages, transports) may extend.
    public struct Problem: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The problem's stable name.
        public let rawValue: String

        /// Creates a problem with a stable name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The input ends in the middle of something.
        public static let truncated = Problem(rawValue: "truncated")
        /// Bytes remain after the last thing the input should hold.
        public static let trailingBytes = Problem(rawValue: "trailingBytes")
        /// A count or size exceeds a decoding limit, or what remains of the input.
        public static let limitExceeded = Problem(rawValue: "limitExceeded")
        /// Not the one canonical encoding: an over-long varint, keys, replicas or siblings
        /// out of order, or a duplicate.
        public static let nonCanonical = Problem(rawValue: "nonCanonical")
        /// A number outside the range of what it encodes (an overflowing varint, a zero
        /// counter, an index past the end).
        public static let outOfRange = Problem(rawValue: "outOfRange")
        /// Text that is not valid UTF-8.
        public static let invalidUTF8 = Problem(rawValue: "invalidUTF8")
        /// A replica or account ID that is not valid.
        public static let invalidIdentifier = Problem(rawValue: "invalidIdentifier")
        /// A key that is empty, or a key listed with no sibling.
        public static let invalidEntry = Problem(rawValue: "invalidEntry")
        /// A sibling whose dot the context does not cover.
        public static let notCovered = Problem(rawValue: "notCovered")
        /// A tag or flag byte that no known encoding uses.
        public static let unknownTag = Problem(rawValue: "unknownTag")
        /// Bytes that are not a Converge message at all (a wrong magic byte).
        public static let notConverge = Problem(rawValue: "notConverge")
        /// A message of a format version this build does not read: a newer peer.
        public static let unsupportedVersion = Problem(rawValue: "unsupportedVersion")
        /// A valid message that its receiver does not accept (a reply sent to a hub, a
        /// file of another account or replica).
        public static let unexpectedMessage = Problem(rawValue: "unexpectedMessage")
        /// Well-formed parts that contradict each other (a hub state whose clock is behind a
        /// write it holds).
        public static let inconsistent = Problem(rawValue: "inconsistent")
        /// Bytes whose checksum does not match: damaged on a disk or on the way.
        public static let damaged = Problem(rawValue: "damaged")
        /// A write whose timestamp lies further ahead of the receiver's clock than the largest
        /// clock offset it tolerates: the sender's clock is wrong (or hostile). Refused, not
        /// adopted; it is accepted once the receiver's clock catches up.
        public static let clockAhead = Problem(rawValue: "clockAhead")
        /// A value that does not have the shape of the `Codable` type asked for (or a
        /// type that cannot be encoded as a property list).
        public static let typeMismatch = Problem(rawValue: "typeMismatch")

        /// The problem's stable name.
        public var description: String { rawValue }
    }

    /// The kind of problem.
    public var problem: Problem
    /// What was wrong, in words: what was being read and the values found.
    public var detail: String
    /// The byte offset in the input where the faulty item starts, when the input is binary.
    public var offset: Int?

    /// Creates a description of malformed input.
    public init(problem: Problem, detail: String, offset: Int? = nil) {
        self.problem = problem
        self.detail = detail
        self.offset = offset
    }

    /// The detail and, when known, the offset.
    public var description: String {
        offset.map { "\(detail) at byte \($0)" } ?? detail
    }
}
