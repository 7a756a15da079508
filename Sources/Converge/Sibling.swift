/// One write that is still current for its key: its dot, its hybrid timestamp and its
/// value, or `nil` for a removal (a tombstone).
///
/// A key has several siblings when writes to it were concurrent and nobody has yet
/// overwritten them all.
///
/// A large array or dictionary read from bytes (a peer's message, a shared-folder file,
/// the store's own file) is kept in its canonical encoding and decoded each time
/// ``value`` is read: decoded, each of its elements would cost many times its encoded
/// byte, so a store holding a peer's 16 MB array of booleans would need hundreds of
/// megabytes for a key nobody reads. Quotas, encoding, and equality of two values kept
/// encoded with the same bytes never decode it; a read, a conflict (whose event carries
/// the winning value) and a comparison with a value held decoded do.
public struct Sibling: Hashable, Sendable, CustomStringConvertible {
    /// What a sibling holds: a removal, a value, or a large value in its encoding.
    private enum Payload: Sendable {
        case removal
        case decoded(Value)
        /// The canonical encoding of a value, checked when it was read; see
        /// ``Sibling/encodedThresholdBytes``.
        case encoded([UInt8])
    }

    /// The identity of the write.
    public var dot: Dot
    /// When the writer made it, by its hybrid logical clock.
    public var timestamp: HybridTimestamp
    private var payload: Payload

    /// The smallest encoding of an array or dictionary that decoding keeps encoded.
    package static let encodedThresholdBytes = 1_024

    /// Creates a sibling: the write `dot`, stamped `timestamp`, of `value` (`nil` for a removal).
    public init(dot: Dot, timestamp: HybridTimestamp, value: Value?) {
        self.dot = dot
        self.timestamp = timestamp
        self.payload = value.map(Payload.decoded) ?? .removal
    }

    /// The value written, or `nil` if the write removed the key. A value kept encoded is
    /// decoded on each read.
    ///
    /// - Complexity: O(1), or O(*n*) in the encoded size of a value kept encoded.
    public var value: Value? {
        // Inlined, a read copies the value alone, not the whole sibling first.
        @inline(__always) get {
            switch payload {
            case .removal: return nil
            case .decoded(let value): return value
            case .encoded(let bytes):
                do { return try Value(encoded: bytes) } catch {
                    preconditionFailure("a value kept encoded was checked when it was read: \(error)")
                }
            }
        }
        set { payload = newValue.map(Payload.decoded) ?? .removal }
    }

    /// Whether this write removed the key.
    public var isTombstone: Bool {
        if case .removal = payload { return true }
        return false
    }

    /// The bytes this sibling's value counts against a quota (0 for a tombstone).
    public var valueSizeBytes: Int {
        switch payload {
        case .removal: return 0
        case .decoded(let value): return value.encodedSize
        case .encoded(let bytes): return bytes.count
        }
    }

    /// Whether the value is kept in its encoding (see ``encodedThresholdBytes``).
    package var keepsValueEncoded: Bool {
        if case .encoded = payload { return true }
        return false
    }

    /// The same write under another dot (a re-stamped or re-issued write), its value kept
    /// as it is held.
    func restamped(_ dot: Dot) -> Sibling {
        var copy = self
        copy.dot = dot
        return copy
    }

    /// Appends the value as a sibling's wire encoding carries it: a flag byte (0 for a
    /// removal, 1 for a value), then the value's canonical encoding.
    func encodeValue(into writer: inout BinaryWriter) {
        switch payload {
        case .removal:
            writer.writeByte(0)
        case .decoded(let value):
            writer.writeByte(1)
            value.encode(into: &writer)
        case .encoded(let bytes):
            writer.writeByte(1)
            writer.writeRaw(bytes)
        }
    }

    /// Reads a sibling's value as ``encodeValue(into:)`` writes it, refusing anything not
    /// canonical. An array or dictionary encoded in ``encodedThresholdBytes`` or more is
    /// checked and kept encoded.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` for an unknown flag or a malformed value,
    ///   ``ConvergeError/invalidValue(_:)`` for a NaN or over-deep value.
    private static func decodePayload(from reader: inout BinaryReader, at offset: Int) throws(ConvergeError) -> Payload {
        switch try reader.readByte() {
        case 0:
            return .removal
        case 1:
            if let bytes = try Value.checkedEncoding(from: &reader, ifAtLeast: encodedThresholdBytes) { return .encoded(bytes) }
            return .decoded(try Value(from: &reader))
        case let flag:
            throw .malformed(.unknownTag, "unknown sibling flag \(flag)", at: offset)
        }
    }

    /// Creates a sibling from its parts as read by ``decodePayload(from:at:)``.
    init(dot: Dot, timestamp: HybridTimestamp, payloadFrom reader: inout BinaryReader, at offset: Int) throws(ConvergeError) {
        self.dot = dot
        self.timestamp = timestamp
        self.payload = try Self.decodePayload(from: &reader, at: offset)
    }

    /// Whether both removed the key or both wrote equal values, however each is held: two
    /// values kept encoded compare their bytes.
    func holdsTheSameValue(as other: Sibling) -> Bool {
        switch (payload, other.payload) {
        case (.removal, .removal): return true
        case (.removal, _), (_, .removal): return false
        case (.decoded(let left), .decoded(let right)): return left == right
        case (.encoded(let left), .encoded(let right)) where left == right: return true
        default: return value == other.value
        }
    }

    /// Equal when dot, timestamp and value are equal, however each value is held.
    public static func == (lhs: Sibling, rhs: Sibling) -> Bool {
        lhs.dot == rhs.dot && lhs.timestamp == rhs.timestamp && lhs.holdsTheSameValue(as: rhs)
    }

    /// Hashes the dot, the timestamp and whether the write removed the key: consistent
    /// with `==` however the value is held, without decoding it.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(dot)
        hasher.combine(timestamp)
        hasher.combine(isTombstone)
    }

    public var description: String {
        switch payload {
        case .removal: return "\(dot)@\(timestamp)=⊥"
        case .decoded(let value): return "\(dot)@\(timestamp)=\(value)"
        case .encoded(let bytes): return "\(dot)@\(timestamp)=<a value of \(bytes.count) encoded bytes>"
        }
    }
}
