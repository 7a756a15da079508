import CCrypto

/// SHA-256 from the system's libcrypto.
enum SHA256 {
    /// The 32-byte digest of `bytes`.
    static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let succeeded = bytes.withUnsafeBytes { buffer in
            EVP_Digest(buffer.baseAddress, buffer.count, &digest, &length, EVP_sha256(), nil)
        }
        // Hashing bytes in memory cannot fail short of memory exhaustion.
        precondition(succeeded == 1 && length == 32, "libcrypto's SHA-256 failed")
        return Array(digest.prefix(32))
    }
}
