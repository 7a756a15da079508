import Converge
import ConvergeTestSupport
import Foundation
import Testing

@Suite("Errors carry data you can match")
struct ErrorTests {
    @Test func aStorageFailureMessageIsDerivedFromItsKindPathAndDetail() {
        let kinds: [StorageFailure.Kind] = [.diskFull, .readOnly, .cannotOpen, .permissionDenied, .locked, .ioError, .notADatabase,
                                            .foreignStore, .corrupt, .newerSchema, .unsupported, .invalidName]
        let messages = kinds.map { StorageFailure(kind: $0, path: "/data/s.sqlite", operation: .open).description }
        #expect(Set(messages).count == kinds.count, "every kind has its own words")
        #expect(messages.allSatisfy { $0.hasPrefix("cannot open /data/s.sqlite: ") })
        #expect(StorageFailure(kind: .corrupt, path: "p", operation: .read, detail: "the entry \"k\" does not decode").description
                == "cannot read p: the store is corrupt (the entry \"k\" does not decode)")
        // A kind another storage defines still gives a readable message.
        let custom = StorageFailure.Kind(rawValue: "quotaOfTheServer")
        #expect(StorageFailure(kind: custom, path: "db", operation: .write).description == "cannot write db: quotaOfTheServer")
        #expect(StorageFailure(kind: .other, path: "db", operation: .write, detail: "it broke").description == "cannot write db: it broke")
    }

    @Test func aCallerMatchesAStorageFailureByKind() throws {
        // The pattern the README and ConvergeError's documentation show.
        let store = try ReplicatedKeyValueStore(replicaID: "phone", storage: RefusingStorage())
        do {
            try store.setValue("v", forKey: "k")
            Issue.record("the refusing storage accepted a write")
        } catch .storage(let failure) where failure.kind == .diskFull {
            #expect(failure.path == "simulated.db" && failure.operation == .write)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func systemErrorsBecomeKinds() {
        #expect(StorageFailure.Kind(posixErrorCode: ENOSPC) == .diskFull)
        #expect(StorageFailure.Kind(posixErrorCode: EROFS) == .readOnly)
        #expect(StorageFailure.Kind(posixErrorCode: EACCES) == .permissionDenied)
        #expect(StorageFailure.Kind(posixErrorCode: ENOENT) == .cannotOpen)
        #expect(StorageFailure.Kind(posixErrorCode: EIO) == .ioError)
        #expect(StorageFailure.Kind(posixErrorCode: EINVAL) == .other)
        // What Foundation throws for a write into a folder that does not exist.
        let missing = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("no-such-folder-\(getpid())/file")
        do {
            try Data("x".utf8).write(to: missing)
            Issue.record("the write into a missing folder succeeded")
        } catch {
            #expect(StorageFailure.Kind(error) == .cannotOpen, "\(error)")
        }
    }

    @Test func malformedInputSaysWhatAndWhere() {
        var writer = BinaryWriter()
        writer.writeString("héllo")
        let bytes = writer.bytes
        // Cut short: the string's bytes end early; the offset is where the read failed.
        #expect(throws: ConvergeError.malformed(MalformedInput(problem: .limitExceeded, detail: "count 6 exceeds the remaining input", offset: 0))) {
            var reader = BinaryReader(Array(bytes.dropLast()))
            _ = try reader.readString()
        }
        // An over-long varint (0x80 0x00 for 0) is not canonical.
        #expect(throws: ConvergeError.malformed(MalformedInput(problem: .nonCanonical, detail: "over-long varint", offset: 1))) {
            var reader = BinaryReader([0x01, 0x80, 0x00])
            _ = try reader.readByte()
            _ = try reader.readVarint()
        }
        // Invalid UTF-8.
        #expect(malformedProblem { var reader = BinaryReader([2, 0xC3, 0x28]); return try reader.readString() } == .invalidUTF8)
        // A value with an unknown tag, and a delta with a key out of order.
        #expect(malformedProblem { try Value(encoded: [0xEE]) } == .unknownTag)
        var map = ReplicatedMap()
        map.write("x", forKey: "b", replica: "r", timestamp: .zero)
        map.write("y", forKey: "a", replica: "r", timestamp: .zero)
        var encoded = map.encoded()
        // Swap the two keys' one-byte names so they are no longer in byte order.
        let first = encoded.firstIndex(of: UInt8(ascii: "a"))!, second = encoded.firstIndex(of: UInt8(ascii: "b"))!
        encoded.swapAt(first, second)
        #expect(malformedProblem { try ReplicatedMap(encoded: encoded) } == .nonCanonical)
        #expect(MalformedInput(problem: .typeMismatch, detail: "cannot decode Int").description == "cannot decode Int")
    }

    @Test func aCodableShapeMismatchIsATypeMismatch() {
        struct Settings: Codable { var volume: Int }
        #expect(malformedProblem { try Value.string("loud").decode(Settings.self) } == .typeMismatch)
    }
}
