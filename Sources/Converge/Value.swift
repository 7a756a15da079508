import Foundation

/// A value the store can hold: the property-list types of `NSUbiquitousKeyValueStore`.
///
/// Values have a canonical compact binary encoding (``encoded()``); sizes for quotas are
/// measured on it, identically on every replica. A value is valid when no double or date
/// is NaN, nesting is at most ``maximumNestingDepth`` levels, and the encoding is at most
/// ``maximumEncodedBytes``.
public enum Value: Hashable, Sendable {
    /// Text.
    case string(String)
    /// A signed 64-bit integer.
    case integer(Int64)
    /// A double; never NaN (see ``ValueViolation/notANumber``).
    case double(Double)
    /// A Boolean.
    case bool(Bool)
    /// Bytes.
    case data(Data)
    /// A point in time.
    case date(Date)
    /// An ordered list of values.
    case array([Value])
    /// Values by string key; encoded in the UTF-8 order of the keys.
    case dictionary([String: Value])

    /// The deepest nesting of arrays and dictionaries accepted (a scalar is depth 0).
    public static let maximumNestingDepth = 32
    /// The largest canonical encoding accepted for one value, whatever the quota.
    public static let maximumEncodedBytes = 16 * 1024 * 1024

    /// Checks that the value can be stored.
    ///
    /// - Throws: ``ConvergeError/invalidValue(_:)`` naming the violation.
    /// - Complexity: O(*n*) in the number of nested elements.
    public func validate() throws(ConvergeError) {
        try validate(depth: 0)
        let size = encodedSize
        if size > Self.maximumEncodedBytes {
            throw .invalidValue(.tooLarge(bytes: size, limit: Self.maximumEncodedBytes))
        }
    }

    private func validate(depth: Int) throws(ConvergeError) {
        switch self {
        case .double(let number) where number.isNaN:
            throw .invalidValue(.notANumber)
        case .date(let date) where date.timeIntervalSinceReferenceDate.isNaN:
            throw .invalidValue(.notANumber)
        case .array(let elements):
            guard depth < Self.maximumNestingDepth else { throw .invalidValue(.tooDeep(limit: Self.maximumNestingDepth)) }
            for element in elements { try element.validate(depth: depth + 1) }
        case .dictionary(let members):
            guard depth < Self.maximumNestingDepth else { throw .invalidValue(.tooDeep(limit: Self.maximumNestingDepth)) }
            for member in members.values { try member.validate(depth: depth + 1) }
        default:
            break
        }
    }
}

// MARK: - Canonical encoding

extension Value {
    private enum Tag: UInt8 {
        case string = 1, integer, double, falseBool, trueBool, data, date, array, dictionary
    }

    /// The canonical encoding: one tag byte, then the payload. Dictionary members are
    /// sorted by the UTF-8 bytes of their keys, so equal values encode identically.
    public func encoded() -> [UInt8] {
        var writer = BinaryWriter(reservingCapacity: encodedSize)
        encode(into: &writer)
        return writer.bytes
    }

    /// Appends the canonical encoding to `writer`.
    package func encode(into writer: inout BinaryWriter) {
        switch self {
        case .string(let text):
            writer.writeByte(Tag.string.rawValue)
            writer.writeString(text)
        case .integer(let number):
            writer.writeByte(Tag.integer.rawValue)
            writer.writeZigzag(number)
        case .double(let number):
            writer.writeByte(Tag.double.rawValue)
            writer.writeFixed64(number.bitPattern)
        case .bool(let flag):
            writer.writeByte(flag ? Tag.trueBool.rawValue : Tag.falseBool.rawValue)
        case .data(let bytes):
            writer.writeByte(Tag.data.rawValue)
            writer.writeBytes(bytes)
        case .date(let date):
            writer.writeByte(Tag.date.rawValue)
            writer.writeFixed64(date.timeIntervalSinceReferenceDate.bitPattern)  // Date's own storage: exact
        case .array(let elements):
            writer.writeByte(Tag.array.rawValue)
            writer.writeVarint(UInt64(elements.count))
            for element in elements { element.encode(into: &writer) }
        case .dictionary(let members):
            writer.writeByte(Tag.dictionary.rawValue)
            writer.writeVarint(UInt64(members.count))
            for (key, member) in Self.canonicallyOrdered(members) {
                writer.writeString(key)
                member.encode(into: &writer)
            }
        }
    }

    /// The size of the canonical encoding in bytes, computed without encoding.
    public var encodedSize: Int {
        switch self {
        case .string(let text):
            let count = text.utf8.count
            return 1 + BinaryWriter.varintSize(UInt64(count)) + count
        case .integer(let number):
            return 1 + BinaryWriter.varintSize(UInt64(bitPattern: (number << 1) ^ (number >> 63)))
        case .double, .date:
            return 9
        case .bool:
            return 1
        case .data(let bytes):
            return 1 + BinaryWriter.varintSize(UInt64(bytes.count)) + bytes.count
        case .array(let elements):
            var size = 1 + BinaryWriter.varintSize(UInt64(elements.count))
            for element in elements { size += element.encodedSize }
            return size
        case .dictionary(let members):
            var size = 1 + BinaryWriter.varintSize(UInt64(members.count))
            for (key, member) in members {
                let count = key.utf8.count
                size += BinaryWriter.varintSize(UInt64(count)) + count + member.encodedSize
            }
            return size
        }
    }

    /// Decodes a value from its canonical encoding, rejecting anything non-canonical.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` for bytes that are not exactly one valid
    ///   value, ``ConvergeError/invalidValue(_:)`` for a NaN or over-deep value.
    public init(encoded bytes: [UInt8]) throws(ConvergeError) {
        var reader = BinaryReader(bytes)
        self = try Value(from: &reader)
        try reader.expectEnd()
    }

    /// Reads one canonically encoded value from `reader`.
    package init(from reader: inout BinaryReader) throws(ConvergeError) {
        self = try Self.decode(from: &reader, depth: 0, keep: true)
    }

    /// Checks the array or dictionary at `reader` as decoding would, without building it,
    /// and returns its encoding if it takes at least `threshold` bytes (moving past it);
    /// returns `nil`, leaving `reader` where it was, for a smaller value or any other kind.
    ///
    /// - Throws: What decoding the value would throw.
    package static func checkedEncoding(from reader: inout BinaryReader, ifAtLeast threshold: Int) throws(ConvergeError) -> [UInt8]? {
        let start = reader.offset
        guard start < reader.bytes.count,
              reader.bytes[start] == Tag.array.rawValue || reader.bytes[start] == Tag.dictionary.rawValue,
              reader.remaining >= threshold else { return nil }
        var scan = reader
        _ = try decode(from: &scan, depth: 0, keep: false)
        guard scan.offset - start >= threshold else { return nil }
        reader = scan
        return Array(reader.bytes[start..<scan.offset])
    }

    /// Reads one value; without `keep`, only checks it (arrays and dictionaries come back
    /// empty), so that checking an array costs no memory per element (a dictionary's keys
    /// are remembered, to refuse two spellings of one key that need not be adjacent).
    private static func decode(from reader: inout BinaryReader, depth: Int, keep: Bool) throws(ConvergeError) -> Value {
        let start = reader.offset
        let byte = try reader.readByte()
        guard let tag = Tag(rawValue: byte) else { throw .malformed(.unknownTag, "unknown value tag \(byte)", at: start) }
        switch tag {
        case .string:
            return .string(try reader.readString())
        case .integer:
            return .integer(try reader.readZigzag())
        case .double:
            let number = Double(bitPattern: try reader.readFixed64())
            guard !number.isNaN else { throw .invalidValue(.notANumber) }
            return .double(number)
        case .falseBool:
            return .bool(false)
        case .trueBool:
            return .bool(true)
        case .data:
            return .data(Data(try reader.readBytes()))
        case .date:
            let seconds = Double(bitPattern: try reader.readFixed64())
            guard !seconds.isNaN else { throw .invalidValue(.notANumber) }
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case .array:
            guard depth < maximumNestingDepth else { throw .invalidValue(.tooDeep(limit: maximumNestingDepth)) }
            let count = try reader.readCount(limit: maximumEncodedBytes)
            var elements: [Value] = []
            if keep { elements.reserveCapacity(count) }
            for _ in 0..<count {
                // Checking only, a Boolean is one byte with nothing to check.
                if !keep, reader.offset < reader.bytes.count,
                   reader.bytes[reader.offset] == Tag.trueBool.rawValue || reader.bytes[reader.offset] == Tag.falseBool.rawValue {
                    _ = try reader.readByte()
                    continue
                }
                let element = try decode(from: &reader, depth: depth + 1, keep: keep)
                if keep { elements.append(element) }
            }
            return .array(elements)
        case .dictionary:
            guard depth < maximumNestingDepth else { throw .invalidValue(.tooDeep(limit: maximumNestingDepth)) }
            let count = try reader.readCount(limit: maximumEncodedBytes, minimumElementBytes: 2)
            var members: [String: Value] = [:]
            var seenKeys: Set<String> = []
            if keep { members.reserveCapacity(count) }
            var previousKey: String?
            for _ in 0..<count {
                let keyOffset = reader.offset
                let key = try reader.readString()
                if let previousKey, !previousKey.precedesInUTF8Order(key) {
                    throw .malformed(.nonCanonical, "dictionary keys not in strictly increasing byte order", at: keyOffset)
                }
                // Keys in byte order can still repeat as Swift strings: two spellings of one text.
                guard keep ? members[key] == nil : seenKeys.insert(key).inserted else { throw .malformed(.nonCanonical, "duplicate dictionary key", at: keyOffset) }
                let member = try decode(from: &reader, depth: depth + 1, keep: keep)
                if keep { members[key] = member }
                previousKey = key
            }
            return .dictionary(members)
        }
    }

    static func canonicallyOrdered(_ members: [String: Value]) -> [(key: String, value: Value)] {
        members.sortedByUTF8(\.key)
    }
}

extension Value: CustomStringConvertible {
    /// A readable, deterministic rendering (dictionary members in key order).
    public var description: String {
        switch self {
        case .string(let text): return "\"\(text)\""
        case .integer(let number): return String(number)
        case .double(let number): return String(number)
        case .bool(let flag): return String(flag)
        case .data(let bytes): return "<\(bytes.count) bytes>"
        case .date(let date): return "@\(date.timeIntervalSince1970)"
        case .array(let elements): return "[" + elements.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let members):
            return "[" + Self.canonicallyOrdered(members).map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "]"
        }
    }
}

extension Value: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, Value)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
