@testable import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Testing

/// Keys, replica IDs and account IDs sort by their UTF-8 bytes everywhere. The comparison
/// reads the bytes in place where a string holds them contiguously; the oracle here copies
/// them into arrays and compares those.
@Suite("UTF-8 order")
struct UTF8OrderTests {
    /// Short (inline) and long (heap) strings, ASCII and not, composed and decomposed
    /// spellings, prefixes of one another.
    static func text(using random: inout Xoshiro256StarStar) -> String {
        let pieces = ["a", "b", "z", "A", "~", "\u{0}", "é", "e\u{301}", "ß", "日本", "😀", "\u{7F}", "\u{80}", "key-", "0123456789abcdef"]
        let count = Int.random(in: 0...6, using: &random)
        return (0..<count).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    @Test func comparesAsTheBytesDo() {
        expectHolds(checkProperty("comparesAsTheBytesDo", cases: 5_000, generate: { random -> (String, String) in
            let first = Self.text(using: &random)
            // Often one a prefix of the other, or equal.
            let second = Bool.random(using: &random) ? Self.text(using: &random) : first + Self.text(using: &random)
            return Bool.random(using: &random) ? (first, second) : (second, first)
        }) { pair in
            let (a, b) = pair
            let expected = Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8))
            if a.precedesInUTF8Order(b) != expected { return "\(Array(a.utf8)) before \(Array(b.utf8)): expected \(expected)" }
            // Substrings too (their bytes are a slice of the base's).
            let (sa, sb) = (("<" + a + ">").dropFirst().dropLast(), ("<" + b + ">").dropFirst().dropLast())
            if sa.precedesInUTF8Order(sb) != expected { return "substrings \(Array(a.utf8)), \(Array(b.utf8)): expected \(expected)" }
            return nil
        })
    }

    /// Where Swift's own order (canonical equivalence) and byte order part ways.
    @Test func composedAndDecomposedSpellingsSortByTheirBytes() {
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        #expect(composed == decomposed)  // one string to Swift
        #expect(decomposed.precedesInUTF8Order(composed))  // 0x65 < 0xC3
        #expect(!composed.precedesInUTF8Order(decomposed))
        #expect([composed, "cafe", decomposed].sortedByUTF8().map { Array($0.utf8) }
                == [Array("cafe".utf8), Array(decomposed.utf8), Array(composed.utf8)])
    }
}
