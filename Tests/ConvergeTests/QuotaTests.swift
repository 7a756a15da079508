import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Foundation
import Synchronization
import Testing

@Suite("Quotas: iCloud's limits, exactly at each and one over")
struct QuotaTests {
    /// A string value whose canonical encoding is exactly `bytes` long.
    static func value(encodedBytes bytes: Int) -> Value {
        var length = bytes - 2
        while Value.string(String(repeating: "x", count: length)).encodedSize > bytes { length -= 1 }
        let value = Value.string(String(repeating: "x", count: length))
        precondition(value.encodedSize == bytes)
        return value
    }

    @Test func theICloudPresetHasApplesNumbers() {
        #expect(Quota.iCloud.maximumKeyCount == 1_024)
        #expect(Quota.iCloud.maximumTotalValueBytes == 1_048_576)
        #expect(Quota.iCloud.maximumValueBytes == 1_048_576)
        #expect(Quota.iCloud.maximumKeyBytes == 64)
    }

    @Test func keysOfExactlySixtyFourBytesAreAcceptedAndSixtyFiveRefused() throws {
        let store = ReplicatedKeyValueStore(replicaID: "q", clock: ManualClock())
        try store.setValue(1, forKey: String(repeating: "k", count: 64))
        let tooLong = String(repeating: "é", count: 32) + "k"  // 65 UTF-8 bytes
        #expect(throws: ConvergeError.quotaExceeded(QuotaViolation(limit: .keyBytes, key: tooLong, attempted: 65, allowed: 64))) {
            try store.setValue(1, forKey: tooLong)
        }
        #expect(store.usage.keyCount == 1)
    }

    @Test func aValueOfExactlyTheLimitIsAcceptedAndOneByteMoreRefused() throws {
        let store = ReplicatedKeyValueStore(replicaID: "q", clock: ManualClock())
        try store.setValue(Self.value(encodedBytes: 1_048_576), forKey: "big")
        #expect(store.usage.valueBytes == 1_048_576)
        let before = store.replicatedState
        #expect(throws: ConvergeError.self) { try store.setValue(Self.value(encodedBytes: 1_048_577), forKey: "other") }
        #expect(store.replicatedState == before)
    }

    @Test func theTotalIsEnforcedExactlyAtTheLimit() throws {
        let quota = Quota(maximumKeyCount: 10, maximumTotalValueBytes: 100, maximumValueBytes: 100, maximumKeyBytes: 8)
        let store = ReplicatedKeyValueStore(replicaID: "q", quota: quota, clock: ManualClock())
        try store.setValue(Self.value(encodedBytes: 60), forKey: "a")
        try store.setValue(Self.value(encodedBytes: 40), forKey: "b")
        #expect(store.usage.valueBytes == 100)
        #expect(throws: ConvergeError.quotaExceeded(QuotaViolation(limit: .totalValueBytes, key: "c", attempted: 101, allowed: 100))) {
            try store.setValue(true, forKey: "c")
        }
        // Replacing a value by a smaller one, or removing, is always allowed.
        try store.setValue(Self.value(encodedBytes: 10), forKey: "a")
        try store.removeValue(forKey: "b")
        #expect(store.usage == QuotaUsage(keyCount: 1, valueBytes: 10))
    }

    @Test func the1025thKeyIsRefused() throws {
        let store = ReplicatedKeyValueStore(replicaID: "q", clock: ManualClock())
        for index in 0..<1_024 { try store.setValue(.bool(true), forKey: "key\(index)") }
        #expect(throws: ConvergeError.quotaExceeded(QuotaViolation(limit: .keyCount, key: "one-more", attempted: 1_025, allowed: 1_024))) {
            try store.setValue(.bool(true), forKey: "one-more")
        }
        try store.setValue(.bool(false), forKey: "key0")  // overwriting an existing key is fine
        #expect(store.usage.keyCount == 1_024)
    }

    @Test func theCompatibleSetPostsQuotaViolationAndChangesNothing() async throws {
        let quota = Quota(maximumKeyCount: 1, maximumTotalValueBytes: 100, maximumValueBytes: 100, maximumKeyBytes: 8)
        let store = ReplicatedKeyValueStore(replicaID: "q", quota: quota, clock: ManualClock())
        store.set("first", forKey: "a")
        let received = NotificationRecorder(store)
        store.set("second", forKey: "b")
        #expect(store.object(forKey: "b") == nil)
        #expect(received.items == [NotificationRecorder.Item(reason: ReplicatedKeyValueStore.quotaViolationChange, keys: ["b"])])
    }

    /// Local writes never take usage over the quota, and a refused write changes
    /// nothing, even when merges from other replicas have taken the store over its
    /// quota (the mesh's soft quota): then only writes that do not grow usage pass.
    static func localWritesRespectTheQuota(enforced: Quota, cases: Int = 1_000) -> PropertyFailure? {
        let quota = Quota(maximumKeyCount: 4, maximumTotalValueBytes: 40, maximumValueBytes: 16, maximumKeyBytes: 3)
        return checkProperty("localWritesRespectTheQuota", cases: cases, generate: { generator in
            (0..<generator.next(in: 1...40)).map { _ -> (key: String, value: Value?, remote: Bool) in
                // Keys of 1 to 4 bytes against a 3-byte limit; values of 1 to 19 bytes
                // against a 16-byte limit.
                let key = generator.element(of: ["a", "b", "c", "d", "e", "ab", "abc", "abcd"])
                let value: Value? = generator.chance(0.2) ? nil : .string(String(repeating: "v", count: generator.next(below: 18)))
                return (key, value, generator.chance(0.15))
            }
        }, shrink: shrinkList, property: { steps in
            let store = ReplicatedKeyValueStore(replicaID: "local", quota: enforced, clock: ManualClock())
            var remote = ReplicatedMap()
            for (index, step) in steps.enumerated() {
                if step.remote {
                    remote.write(step.value, forKey: step.key, replica: "remote", timestamp: HybridTimestamp(wallMilliseconds: UInt64(index), logical: 0))
                    _ = try? store.merge(remote.asDelta)
                    continue
                }
                let before = store.replicatedState
                do {
                    try store.setValue(step.value, forKey: step.key)
                    let after = store.usage
                    if step.key.utf8.count > quota.maximumKeyBytes && step.value != nil {
                        return "step \(index): accepted key \"\(step.key)\" over \(quota.maximumKeyBytes) bytes"
                    }
                    if let value = step.value, value.encodedSize > quota.maximumValueBytes {
                        return "step \(index): accepted a \(value.encodedSize)-byte value"
                    }
                    if after.keyCount > quota.maximumKeyCount && after.keyCount > before.usage.keyCount {
                        return "step \(index): key count grew to \(after.keyCount)"
                    }
                    if after.valueBytes > quota.maximumTotalValueBytes && after.valueBytes > before.usage.valueBytes {
                        return "step \(index): total grew to \(after.valueBytes) bytes"
                    }
                    if !quota.admits(before.usage) && (after.keyCount > before.usage.keyCount || after.valueBytes > before.usage.valueBytes) {
                        return "step \(index): usage grew from \(before.usage) to \(after) while over the quota"
                    }
                } catch {
                    if store.replicatedState != before { return "step \(index): refused write changed the state" }
                }
            }
            return nil
        })
    }

    @Test func localWritesRespectTheQuota() {
        let quota = Quota(maximumKeyCount: 4, maximumTotalValueBytes: 40, maximumValueBytes: 16, maximumKeyBytes: 3)
        expectHolds(Self.localWritesRespectTheQuota(enforced: quota))
    }

    @Test func theQuotaPropertyCatchesAnOffByOneStore() {
        let offByOne = Quota(maximumKeyCount: 5, maximumTotalValueBytes: 41, maximumValueBytes: 17, maximumKeyBytes: 4)
        expectCaught(Self.localWritesRespectTheQuota(enforced: offByOne))
    }
}

