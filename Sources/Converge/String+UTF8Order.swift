// The one order of keys, replica IDs and account IDs everywhere: by UTF-8 bytes.
//
// Swift's `String` comparison (`<`, `sorted()`) follows Unicode canonical equivalence, so
// two spellings of "é" compare equal and the order is not the byte order other languages,
// SQLite and the wire format use. Converge compares identities as bytes, everywhere, so
// that every replica sorts, encodes and tie-breaks the same way; these helpers name that
// order once.

extension StringProtocol {
    /// Whether this string's UTF-8 bytes sort before `other`'s.
    @inlinable
    package func precedesInUTF8Order(_ other: some StringProtocol) -> Bool {
        // Most strings hold their UTF-8 contiguously: compare the bytes directly, not
        // through the UTF-8 view's iterator (which made sorting keys and replica IDs slow).
        let compared = utf8.withContiguousStorageIfAvailable { mine in
            other.utf8.withContiguousStorageIfAvailable { theirs in utf8BytesPrecede(mine, theirs) }
        }
        if let compared, let precedes = compared { return precedes }
        return utf8.lexicographicallyPrecedes(other.utf8)
    }
}

/// Whether `a` sorts before `b`, byte by byte (a prefix sorts first).
@inlinable
package func utf8BytesPrecede(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    let shared = min(a.count, b.count)
    var index = 0
    while index < shared {
        if a[index] != b[index] { return a[index] < b[index] }
        index += 1
    }
    return a.count < b.count
}

extension Sequence where Element: StringProtocol {
    /// The strings sorted by their UTF-8 bytes.
    @inlinable
    package func sortedByUTF8() -> [Element] {
        sorted { $0.precedesInUTF8Order($1) }
    }
}

extension Sequence {
    /// The elements sorted by the UTF-8 bytes of the string `key` gives for each.
    @inlinable
    package func sortedByUTF8(_ key: (Element) -> some StringProtocol) -> [Element] {
        sorted { key($0).precedesInUTF8Order(key($1)) }
    }
}
