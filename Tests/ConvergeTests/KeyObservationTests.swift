import Converge
import Foundation
import Observation
import Synchronization
import Testing

/// Observing one key: the `AsyncStream` of its values, the observable `ReplicatedValue`
/// and the `@Replicated` property wrapper.
@Suite("Observing one key")
struct KeyObservationTests {
    /// Everything a stream sent, read by a task of its own.
    final class Received: Sendable {
        let values = Mutex<[Value?]>([])
        let reader = Mutex<Task<Void, Never>?>(nil)

        init(_ stream: AsyncStream<Value?>) {
            reader.withLock { $0 = Task { [weak self] in for await value in stream { self?.values.withLock { $0.append(value) } } } }
        }

        deinit { reader.withLock { $0?.cancel() } }

        /// Waits until `count` values arrived (the stream keeps only the newest value for a
        /// slow reader, so each change is awaited before the next).
        func wait(for count: Int) async -> [Value?] {
            let deadline = Date().addingTimeInterval(120)
            while values.withLock({ $0.count }) < count && Date() < deadline { try? await Task.sleep(for: .milliseconds(2)) }
            try? await Task.sleep(for: .milliseconds(50))   // and nothing more comes
            return values.withLock { $0 }
        }
    }

    @Test func theStreamGivesTheValueNowThenEveryChangeWhoeverMadeIt() async throws {
        let hub = InMemoryHub()
        let storage = InMemoryStorage()
        let phone = try ReplicatedKeyValueStore(replicaID: "phone", hub: hub, storage: storage)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub)
        phone.set("light", forKey: "theme")
        let received = Received(phone.values(forKey: "theme"))
        #expect(await received.wait(for: 1) == [.string("light")])
        phone.set("light", forKey: "theme")           // the same value: not sent again
        phone.set("other", forKey: "unrelated")       // another key: not sent
        #expect(await received.wait(for: 1) == [.string("light")])
        phone.set("dark", forKey: "theme")            // a local write
        #expect(await received.wait(for: 2) == [.string("light"), .string("dark")])
        tablet.set("sepia", forKey: "theme")
        _ = tablet.synchronize()
        _ = phone.synchronize()                       // another device's write
        #expect(await received.wait(for: 3).last == .string("sepia"))
        // Another store object on the same storage (another process would be the same).
        let widget = try ReplicatedKeyValueStore(replicaID: "phone", storage: storage)
        widget.set("contrast", forKey: "theme")
        try phone.refresh()
        #expect(await received.wait(for: 4).last == .string("contrast"))
        phone.removeObject(forKey: "theme")           // removed: nil
        #expect(await received.wait(for: 5) == [.string("light"), .string("dark"), .string("sepia"), .string("contrast"), nil])
    }

    @Test func aCancelledStreamStopsObserving() async throws {
        let store = ReplicatedKeyValueStore(replicaID: "phone")
        let reader = Task {
            var count = 0
            for await _ in store.values(forKey: "k") { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(20))
        reader.cancel()
        #expect(await reader.value >= 1)
        for index in 0..<100 { store.set(Int64(index), forKey: "k") }   // nobody listens: nothing piles up
        #expect(store.longLong(forKey: "k") == 99)
    }

    @MainActor
    @Test func aReplicatedValueIsTrackedByObservationAndFollowsOtherDevices() async throws {
        let hub = InMemoryHub()
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub)
        let tablet = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub)
        let fontSize = ReplicatedValue(store: phone, key: "fontSize", default: 14)
        #expect(fontSize.value == 14)
        fontSize.value = 18
        #expect(phone.longLong(forKey: "fontSize") == 18 && fontSize.value == 18)
        _ = phone.synchronize()
        _ = tablet.synchronize()
        #expect(tablet.longLong(forKey: "fontSize") == 18)
        // A change on another device reaches the value, and Observation reports it.
        let changed = Mutex(false)
        withObservationTracking { _ = fontSize.value } onChange: { changed.withLock { $0 = true } }
        tablet.set(Int64(22), forKey: "fontSize")
        _ = tablet.synchronize()
        _ = phone.synchronize()
        // Generous waits: under a loaded suite the main actor and the pool may be busy.
        var deadline = Date().addingTimeInterval(120)
        while fontSize.value != 22 && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(fontSize.value == 22)
        #expect(changed.withLock { $0 })
        // A value of another shape reads as the default; a refused write changes nothing.
        phone.set("large", forKey: "fontSize")
        deadline = Date().addingTimeInterval(120)
        while fontSize.value != 14 && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(fontSize.value == 14)
        let tiny = ReplicatedKeyValueStore(replicaID: "tiny", quota: Quota(maximumKeyCount: 1, maximumTotalValueBytes: 1_000_000, maximumValueBytes: 1_000_000, maximumKeyBytes: 64))
        let first = ReplicatedValue(store: tiny, key: "a", default: "")
        let second = ReplicatedValue(store: tiny, key: "b", default: "none")
        first.value = "kept"
        second.value = "refused"
        #expect(second.value == "none" && tiny.object(forKey: "b") == nil && first.value == "kept")
    }

    @Test func theReplicatedWrapperReadsAndWritesItsKey() {
        let store = ReplicatedKeyValueStore(replicaID: "phone")
        struct Preferences {
            @Replicated var fontSize: Int
            @Replicated var favourites: [String]
            init(store: ReplicatedKeyValueStore) {
                _fontSize = Replicated(wrappedValue: 14, store: store, key: "fontSize")
                _favourites = Replicated(wrappedValue: [], store: store, key: "favourites")
            }
        }
        let preferences = Preferences(store: store)
        #expect(preferences.fontSize == 14 && preferences.favourites.isEmpty)
        preferences.fontSize = 18
        preferences.favourites = ["Surrey", "Kent"]
        #expect(store.longLong(forKey: "fontSize") == 18)
        #expect(store.array(forKey: "favourites") as? [String] == ["Surrey", "Kent"])
        #expect(Preferences(store: store).fontSize == 18)
        store.set("not a number", forKey: "fontSize")
        #expect(preferences.fontSize == 14, "a value of another shape reads as the default")
    }
}
