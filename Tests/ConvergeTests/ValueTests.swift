import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Foundation
import Testing

@Suite("Values: canonical encoding, limits and conversions")
struct ValueTests {
    @Test func encodingRoundTripsAndSizeMatches() {
        expectHolds(checkProperty("encodingRoundTripsAndSizeMatches", cases: 3_000,
                                  generate: { Value.random(using: &$0) }) { value in
            let bytes = value.encoded()
            guard bytes.count == value.encodedSize else { return "encodedSize \(value.encodedSize) but \(bytes.count) bytes" }
            guard let decoded = try? Value(encoded: bytes) else { return "does not decode" }
            guard decoded.encoded() == bytes else { return "re-encoding differs" }
            return nil
        })
    }

    @Test func dictionariesEncodeInKeyOrderWhateverTheInsertionOrder() {
        var first: [String: Value] = [:]
        var second: [String: Value] = [:]
        let keys = (0..<50).map { "key\($0)" }
        for key in keys { first[key] = .integer(1) }
        for key in keys.reversed() { second[key] = .integer(1) }
        #expect(Value.dictionary(first).encoded() == Value.dictionary(second).encoded())
    }

    @Test func decodingRandomAndMutatedBytesNeverCrashes() {
        // Seeded: random byte strings and single-byte mutations of valid encodings.
        var generator = Xoshiro256StarStar(seed: 99)
        var rejected = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<generator.next(below: 24)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            } else {
                bytes = Value.random(using: &generator).encoded()
                let index = generator.next(below: bytes.count)
                bytes[index] = UInt8(truncatingIfNeeded: generator.next())
            }
            do {
                let value = try Value(encoded: bytes)
                #expect(value.encoded() == bytes, "accepted a non-canonical encoding")
            } catch {
                rejected += 1
            }
        }
        #expect(rejected > 5_000)
    }

    @Test func nanIsRejectedEverywhere() {
        #expect(throws: ConvergeError.invalidValue(.notANumber)) { try Value.double(.nan).validate() }
        #expect(throws: ConvergeError.invalidValue(.notANumber)) { try Value.array([.double(.nan)]).validate() }
        #expect(throws: ConvergeError.invalidValue(.notANumber)) { try Value(propertyList: Double.nan) }
        var bytes = Value.double(1).encoded()
        bytes.replaceSubrange(1..., with: withUnsafeBytes(of: Double.nan.bitPattern.littleEndian, Array.init))
        #expect(throws: ConvergeError.invalidValue(.notANumber)) { try Value(encoded: bytes) }
    }

    @Test func nestingDeeperThanTheLimitIsRejected() throws {
        var deep: Value = .integer(0)
        for _ in 0..<Value.maximumNestingDepth { deep = .array([deep]) }
        try deep.validate()
        #expect(throws: ConvergeError.invalidValue(.tooDeep(limit: Value.maximumNestingDepth))) {
            try Value.array([deep]).validate()
        }
        #expect(throws: ConvergeError.invalidValue(.tooDeep(limit: Value.maximumNestingDepth))) {
            try Value(encoded: Value.array([deep]).encoded())
        }
    }

    @Test func propertyListObjectsConvert() throws {
        #expect(try Value(propertyList: "x") == .string("x"))
        #expect(try Value(propertyList: 3) == .integer(3))
        #expect(try Value(propertyList: true) == .bool(true))
        #expect(try Value(propertyList: 2.5) == .double(2.5))
        #expect(try Value(propertyList: NSNumber(value: true)) == .bool(true))
        #expect(try Value(propertyList: NSNumber(value: 7)) == .integer(7))
        #expect(try Value(propertyList: NSNumber(value: 7.5)) == .double(7.5))
        #expect(try Value(propertyList: ["a", 1] as [Any]) == .array(["a", 1]))
        #expect(try Value(propertyList: ["k": [1, 2]] as [String: Any]) == .dictionary(["k": [1, 2]]))
        #expect(try Value(propertyList: Data([1, 2])) == .data(Data([1, 2])))
    }

    @Test func nonPropertyListObjectsAreRejectedWithTheirType() {
        struct NotAPlist {}
        #expect(throws: ConvergeError.invalidValue(.unsupportedType("NotAPlist"))) { try Value(propertyList: NotAPlist()) }
        #expect(throws: ConvergeError.self) { try Value(propertyList: [NotAPlist()] as [Any]) }
        #expect(throws: ConvergeError.self) { try Value(propertyList: UInt64.max) }
        #expect(throws: ConvergeError.self) { try Value(propertyList: [1: "int keys"] as [Int: String]) }
    }

    @Test func codableTypesRoundTrip() throws {
        struct Settings: Codable, Equatable {
            var name: String
            var volume: Double
            var tags: [String]
            var lastOpened: Date
        }
        let settings = Settings(name: "n", volume: 0.5, tags: ["a", "b"], lastOpened: Date(timeIntervalSince1970: 1_000))
        let value = try Value(encoding: settings)
        #expect(try value.decode(Settings.self) == settings)
        #expect(throws: ConvergeError.self) { try Value.integer(1).decode(Settings.self) }
    }
}
