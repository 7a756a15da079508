import Converge
import Dispatch
import Foundation
import Testing

@Suite("The store is safe to use from many threads")
struct ConcurrencyTests {
    @Test func concurrentWritersReadersAndMergesLoseNothing() throws {
        let quota = Quota(maximumKeyCount: 100_000, maximumTotalValueBytes: .max, maximumValueBytes: 1_024, maximumKeyBytes: 64)
        let store = ReplicatedKeyValueStore(replicaID: "phone", quota: quota, clock: ManualClock())
        let threads = 8
        let writesPerThread = 300
        var remote = ReplicatedMap()
        for index in 0..<200 {
            remote.write(.integer(Int64(index)), forKey: "remote\(index)", replica: "tablet", timestamp: .zero)
        }
        let delta = remote.asDelta
        let token = store.observe { _ in _ = store.usage }  // observers may call back in
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<writesPerThread {
                try! store.setValue(.integer(Int64(index)), forKey: "t\(thread)-\(index)")
                _ = store.value(forKey: "t\((thread + 1) % threads)-\(index)")
                _ = store.longLong(forKey: "remote\(index % 200)")
                if index % 50 == 0 { _ = try! store.merge(delta) }
            }
        }
        token.cancel()
        let state = store.replicatedState
        #expect(state._invariantViolation() == nil)
        #expect(state.context["phone"] == UInt64(threads * writesPerThread))
        #expect(store.usage.keyCount == threads * writesPerThread + 200)
        for thread in 0..<threads {
            #expect(store.longLong(forKey: "t\(thread)-\(writesPerThread - 1)") == Int64(writesPerThread - 1))
        }
    }
}
