/// CRC-32C (Castagnoli), the checksum of every encoded message and stored record: it
/// detects every burst error up to 32 bits and, unlike a bare length or magic byte, a
/// damaged byte anywhere. The polynomial of iSCSI, ext4 and LevelDB (reflected 0x82F63B78).
package enum CRC32C {
    /// Eight tables of 256 entries, one after another: table 0 is the checksum of each
    /// byte, and entry *i* of table *k* is that of byte *i* followed by *k* zero bytes, so
    /// that eight bytes are folded in at once ("slicing by 8"), several times faster than
    /// one at a time, whose every step waits for the one before.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[index] = crc
        }
        for table in 1..<8 {
            for index in 0..<256 {
                let previous = tables[(table - 1) * 256 + index]
                tables[table * 256 + index] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// The checksum of `bytes`.
    package static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt32 {
        checksum(of: [], then: bytes)
    }

    /// The checksum of `first` followed by `second`, without joining them.
    private static func checksum<Bytes: Sequence<UInt8>>(of first: [UInt8], then second: Bytes) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        tables.withUnsafeBufferPointer { tables in
            first.withUnsafeBufferPointer { crc = update(crc, with: $0, tables: tables) }
            if second.withContiguousStorageIfAvailable({ crc = update(crc, with: $0, tables: tables) }) == nil {
                for byte in second { crc = tables[Int(UInt8(truncatingIfNeeded: crc) ^ byte)] ^ (crc >> 8) }
            }
        }
        return crc ^ 0xFFFF_FFFF
    }

    /// `crc` (not yet inverted at the end) with `bytes` folded in: eight at a time, then
    /// the rest one at a time.
    @inline(__always)
    private static func update(_ crc: UInt32, with bytes: UnsafeBufferPointer<UInt8>, tables: UnsafeBufferPointer<UInt32>) -> UInt32 {
        var crc = crc
        var index = 0
        let count = bytes.count
        @inline(__always) func entry(_ table: Int, _ byte: UInt32) -> UInt32 { tables[table &* 256 &+ Int(byte & 0xFF)] }
        while index &+ 8 <= count {
            let low = crc ^ (UInt32(bytes[index]) | UInt32(bytes[index &+ 1]) << 8 | UInt32(bytes[index &+ 2]) << 16
                | UInt32(bytes[index &+ 3]) << 24)
            let high = UInt32(bytes[index &+ 4]) | UInt32(bytes[index &+ 5]) << 8 | UInt32(bytes[index &+ 6]) << 16
                | UInt32(bytes[index &+ 7]) << 24
            crc = entry(7, low) ^ entry(6, low >> 8) ^ entry(5, low >> 16) ^ entry(4, low >> 24)
                ^ entry(3, high) ^ entry(2, high >> 8) ^ entry(1, high >> 16) ^ entry(0, high >> 24)
            index &+= 8
        }
        while index < count {
            crc = tables[Int(UInt8(truncatingIfNeeded: crc) ^ bytes[index])] ^ (crc >> 8)
            index &+= 1
        }
        return crc
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
