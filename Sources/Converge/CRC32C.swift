/// CRC-32C (Castagnoli), the checksum of every encoded message and stored record: it
/// detects every burst error up to 32 bits and, unlike a bare length or magic byte, a
/// damaged byte anywhere. The polynomial of iSCSI, ext4 and LevelDB (reflected 0x82F63B78).
package enum CRC32C {
    private static let table: [UInt32] = (0..<256).map { index -> UInt32 in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        return crc
    }

    /// The checksum of `bytes`.
    package static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt32 {
        checksum(of: [], then: bytes)
    }

    /// The checksum of `first` followed by `second`, without joining them.
    private static func checksum<Bytes: Sequence<UInt8>>(of first: [UInt8], then second: Bytes) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { table in
            for byte in first { crc = table[Int(UInt8(truncatingIfNeeded: crc) ^ byte)] ^ (crc >> 8) }
            for byte in second { crc = table[Int(UInt8(truncatingIfNeeded: crc) ^ byte)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }

    /// `bytes` followed by their checksum, little-endian. The checksum also covers
    /// `context`, which is not written (a stored record's name, kept beside it).
    package static func sealed(_ bytes: [UInt8], context: [UInt8] = []) -> [UInt8] {
        let crc = checksum(of: context, then: bytes)
        var record: [UInt8] = []
        record.reserveCapacity(bytes.count + 4)
        record.append(contentsOf: bytes)
        for shift: UInt32 in [0, 8, 16, 24] { record.append(UInt8(truncatingIfNeeded: crc >> shift)) }
        return record
    }

    /// The bytes before the checksum that ends `sealed`, if it matches (with `context`, as
    /// ``sealed(_:context:)`` wrote it).
    ///
    /// - Parameter what: What the bytes are, for the error ("message", "the entry \"k\"").
    /// - Throws: ``ConvergeError/malformed(_:)`` with ``MalformedInput/Problem/damaged`` if
    ///   the bytes are too short to hold a checksum or do not match it.
    package static func unsealed(_ sealed: [UInt8], context: [UInt8] = [], what: String) throws(ConvergeError) -> [UInt8] {
        guard sealed.count >= 4 else { throw .malformed(.damaged, "\(what) is too short to hold its checksum (\(sealed.count) bytes)") }
        let body = sealed.prefix(sealed.count - 4)
        let stored = (0..<4).reduce(UInt32(0)) { $0 | UInt32(sealed[sealed.count - 4 + $1]) << (8 * UInt32($1)) }
        let computed = checksum(of: context, then: body)
        guard stored == computed else {
            throw .malformed(.damaged, "\(what) is damaged: its CRC-32C is \(hex(computed)), not the \(hex(stored)) it was written with",
                             at: sealed.count - 4)
        }
        return Array(body)
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
    }
}
