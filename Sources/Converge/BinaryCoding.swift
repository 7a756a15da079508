/// Appends the compact binary encodings Converge uses for values, states and messages.
///
/// Package-internal: apps exchange whole encodings (``SyncMessage/encoded()``,
/// ``ReplicatedMap/encoded()``), never partial ones.
///
/// Integers are little-endian; lengths and counters are LEB128 varints; signed integers
/// are zigzag varints. The writer never fails: limits are checked by whoever builds the
/// content, and by ``BinaryReader`` on the way in.
package struct BinaryWriter: Sendable {
    /// The bytes written so far.
    package private(set) var bytes: [UInt8]

    package init(reservingCapacity capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    package mutating func writeByte(_ byte: UInt8) { bytes.append(byte) }

    package mutating func writeVarint(_ value: UInt64) {
        var remaining = value
        while remaining >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: remaining) | 0x80)
            remaining >>= 7
        }
        bytes.append(UInt8(remaining))
    }

    package mutating func writeZigzag(_ value: Int64) {
        writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    package mutating func writeFixed64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends `content` as it is, with no length: an encoding written before.
    package mutating func writeRaw(_ content: [UInt8]) { bytes.append(contentsOf: content) }

    package mutating func writeBytes<C: Collection>(_ content: C) where C.Element == UInt8 {
        writeVarint(UInt64(content.count))
        bytes.append(contentsOf: content)
    }

    package mutating func writeString(_ text: String) {
        // From the contiguous bytes where there are (always, but for a string bridged from
        // elsewhere): appending the UTF-8 view goes through its indices, which costs more
        // than the bytes of a replica ID, and every message names every replica it knows.
        let appended: Void? = text.utf8.withContiguousStorageIfAvailable { utf8 in
            writeVarint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
        if appended == nil { writeBytes(text.utf8) }
    }

    /// The number of bytes `value` takes as a varint.
    package static func varintSize(_ value: UInt64) -> Int {
        var size = 1
        var remaining = value >> 7
        while remaining != 0 {
            size += 1
            remaining >>= 7
        }
        return size
    }
}

/// Reads what ``BinaryWriter`` wrote, from untrusted bytes.
///
/// Every read is bounds-checked and throws ``ConvergeError/malformed(_:)`` instead of
/// trapping; a length prefix larger than what remains is rejected before anything is
/// allocated.
package struct BinaryReader {
    let bytes: [UInt8]
    /// The offset of the next byte to read.
    package private(set) var offset: Int

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
        offset = 0
    }

    /// Whether every byte has been read.
    package var isAtEnd: Bool { offset == bytes.count }
    /// How many bytes remain.
    package var remaining: Int { bytes.count - offset }

    package mutating func readByte() throws(ConvergeError) -> UInt8 {
        guard offset < bytes.count else { throw .malformed(.truncated, "unexpected end of input", at: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }

    package mutating func readVarint() throws(ConvergeError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        let start = offset
        while true {
            let byte = try readByte()
            if shift == 63 && byte > 1 { throw .malformed(.outOfRange, "varint overflows 64 bits", at: start) }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                // Reject over-long encodings so that every value has one encoding.
                if byte == 0 && shift > 0 { throw .malformed(.nonCanonical, "over-long varint", at: start) }
                return result
            }
            shift += 7
        }
    }

    package mutating func readZigzag() throws(ConvergeError) -> Int64 {
        let raw = try readVarint()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    package mutating func readFixed64() throws(ConvergeError) -> UInt64 {
        guard remaining >= 8 else { throw .malformed(.truncated, "unexpected end of input", at: offset) }
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
        offset += 8
        return value
    }

    /// Reads a count that must not exceed `limit` (and, when each element takes at least
    /// one byte, what remains), so that a forged count cannot make a reader allocate.
    package mutating func readCount(limit: Int, minimumElementBytes: Int = 1) throws(ConvergeError) -> Int {
        let start = offset
        let raw = try readVarint()
        guard raw <= UInt64(limit) else { throw .malformed(.limitExceeded, "count \(raw) exceeds the limit of \(limit)", at: start) }
        let count = Int(raw)
        guard count.multipliedReportingOverflow(by: minimumElementBytes).partialValue <= remaining else {
            throw .malformed(.limitExceeded, "count \(count) exceeds the remaining input", at: start)
        }
        return count
    }

    package mutating func readBytes(limit: Int = .max) throws(ConvergeError) -> ArraySlice<UInt8> {
        let count = try readCount(limit: limit)
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    package mutating func readString(limit: Int = .max) throws(ConvergeError) -> String {
        let start = offset
        let raw = try readBytes(limit: limit)
        // Decoding repairs invalid UTF-8 (each ill-formed sequence becomes U+FFFD), so the
        // bytes are valid exactly when the text is made of them unchanged. Not
        // `String(validating:as:)`, which is generic at run time: its type metadata cost more
        // than the decoding of a replica ID.
        let (text, valid) = raw.withUnsafeBufferPointer { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            return (text, text.utf8.withContiguousStorageIfAvailable { $0.elementsEqual(bytes) } ?? text.utf8.elementsEqual(bytes))
        }
        guard valid else {
            throw .malformed(.invalidUTF8, "invalid UTF-8 in string", at: start)
        }
        return text
    }

    /// Throws unless every byte has been consumed.
    package func expectEnd() throws(ConvergeError) {
        guard isAtEnd else { throw .malformed(.trailingBytes, "\(remaining) unexpected trailing bytes", at: offset) }
    }
}
