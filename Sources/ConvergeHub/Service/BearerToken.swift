import CCrypto

/// Bearer tokens: drawn from the system's cryptographic generator, stored only as their
/// SHA-256, and compared in constant time (libcrypto through a system-library target).
public enum BearerToken {
    /// What every token starts with, so a leaked one is easy to recognise (and to scan for).
    public static let prefix = "cvgh_"
    /// Random bytes in a token: 256 bits.
    public static let randomByteCount = 32

    /// A new token: the prefix and 32 random bytes in unpadded base64url (48 characters).
    ///
    /// - Throws: ``HubError/randomUnavailable`` if the generator cannot give bytes
    ///   (never a weaker token).
    public static func generate() throws(HubError) -> String {
        var bytes = [UInt8](repeating: 0, count: randomByteCount)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else { throw .randomUnavailable }
        return prefix + base64URL(bytes)
    }

    /// The SHA-256 of a token's UTF-8 bytes: what the hub stores and looks tokens up by.
    public static func hash(_ token: String) -> [UInt8] {
        SHA256.digest(Array(token.utf8))
    }

    /// Whether two hashes are equal, in time that does not depend on where they differ.
    public static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0 }
        }
    }

    /// Whether `text` has the shape of a token (before any lookup).
    public static func isWellFormed(_ text: String) -> Bool {
        text.hasPrefix(prefix) && text.utf8.count <= 128
            && text.utf8.dropFirst(prefix.utf8.count).allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }

    private static func base64URL(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value: UInt32 = 0
            for (position, byte) in chunk.enumerated() { value |= UInt32(byte) << (16 - 8 * UInt32(position)) }
            for position in 0...chunk.count { output.append(alphabet[Int((value >> (18 - 6 * UInt32(position))) & 0x3F)]) }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }
}
