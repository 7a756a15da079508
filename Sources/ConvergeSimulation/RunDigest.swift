/// FNV-1a, 64 bits: the digest of a run. Not cryptographic; it only has to differ when
/// two runs differ.
package struct RunDigest: Sendable {
    private var hash: UInt64 = 0xCBF2_9CE4_8422_2325

    package init() {}

    package mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
    }

    package mutating func update(_ text: String) { update(text.utf8) }

    package mutating func update(_ number: Int) {
        var value = UInt64(bitPattern: Int64(number))
        for _ in 0..<8 {
            update(CollectionOfOne(UInt8(truncatingIfNeeded: value)))
            value >>= 8
        }
    }

    package var hex: String {
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
