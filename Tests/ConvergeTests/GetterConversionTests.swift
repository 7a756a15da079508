import Converge
import Foundation
import Testing

/// Apple's documented getter conversions, key by key: absent keys give false, 0, 0.0 and
/// nil; numbers and strings convert as NSNumber and NSString do; the collection getters
/// return nil for the wrong type.
@Suite("Compatible getters convert as NSUbiquitousKeyValueStore does")
struct GetterConversionTests {
    static func store(with value: Value?) -> ReplicatedKeyValueStore {
        let store = ReplicatedKeyValueStore(replicaID: "getters", clock: ManualClock())
        if let value { try! store.setValue(value, forKey: "k") }
        return store
    }

    @Test(arguments: [
        (nil, false), (.integer(1), true), (.double(1.0), true), (.string("true"), true), (.string("YES"), true),
        (.string("1"), true), (.string("yes"), true), (.string("  +0012"), true), (.integer(2), true), (.bool(true), true),
        (.integer(0), false), (.double(0), false), (.string("no"), false), (.string("0"), false), (.string("false"), false),
        (.string(""), false), (.data(Data([1])), false), (.array([1]), false),
    ] as [(Value?, Bool)])
    func bool(_ stored: Value?, _ expected: Bool) {
        #expect(Self.store(with: stored).bool(forKey: "k") == expected)
    }

    @Test(arguments: [
        (nil, 0), (.integer(42), 42), (.double(2.67), 2), (.double(-2.67), -2), (.string("123"), 123),
        (.string(" -45xyz"), -45), (.string("abc"), 0), (.bool(true), 1), (.double(1e300), .max), (.double(-1e300), .min),
        (.string("99999999999999999999"), .max), (.data(Data()), 0),
    ] as [(Value?, Int64)])
    func longLong(_ stored: Value?, _ expected: Int64) {
        #expect(Self.store(with: stored).longLong(forKey: "k") == expected)
    }

    @Test(arguments: [
        (nil, 0), (.double(1.25), 1.25), (.integer(7), 7), (.string("123.4"), 123.4), (.string("1e3"), 1000),
        (.string("x"), 0), (.string("2.5 apples"), 2.5), (.bool(true), 1), (.array([]), 0),
    ] as [(Value?, Double)])
    func double(_ stored: Value?, _ expected: Double) {
        #expect(Self.store(with: stored).double(forKey: "k") == expected)
    }

    @Test(arguments: [
        (nil, nil), (.string("s"), "s"), (.integer(123), "123"), (.double(2.5), "2.5"), (.double(2), "2"),
        (.bool(true), "1"), (.data(Data([1])), nil), (.array(["a"]), nil), (.dictionary([:]), nil),
    ] as [(Value?, String?)])
    func string(_ stored: Value?, _ expected: String?) {
        #expect(Self.store(with: stored).string(forKey: "k") == expected)
    }

    @Test func collectionGettersReturnNilForTheWrongType() {
        let wrong = Self.store(with: .string("not a collection"))
        #expect(wrong.data(forKey: "k") == nil)
        #expect(wrong.array(forKey: "k") == nil)
        #expect(wrong.dictionary(forKey: "k") == nil)
        let absent = Self.store(with: nil)
        #expect(absent.object(forKey: "k") == nil)
        #expect(absent.data(forKey: "k") == nil)
    }

    @Test func collectionGettersReturnFoundationObjects() throws {
        let store = Self.store(with: nil)
        store.set(["a", 1, true] as [Any], forKey: "array")
        store.set(["n": 2.5] as [String: Any], forKey: "dict")
        store.set(Data([9]), forKey: "data")
        let array = try #require(store.array(forKey: "array"))
        #expect(array[0] as? String == "a")
        #expect(array[1] as? Int == 1)
        #expect(array[2] as? Bool == true)
        #expect(store.dictionary(forKey: "dict")?["n"] as? Double == 2.5)
        #expect(store.data(forKey: "data") == Data([9]))
        #expect(store.object(forKey: "array") as? [Any] != nil)
    }
}
