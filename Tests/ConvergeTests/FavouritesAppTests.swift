import Converge
import Foundation
import Testing

// The pattern apps use with NSUbiquitousKeyValueStore: the controller depends on a
// protocol extracted from the store, and production code passes the real store. Here the
// real ReplicatedKeyValueStore is injected where a test would usually pass a mock.

/// The slice of `NSUbiquitousKeyValueStore` the app uses.
protocol UbiquitousKeyValueStoring: AnyObject {
    func set(_ value: [Any]?, forKey key: String)
    func array(forKey key: String) -> [Any]?
    @discardableResult func synchronize() -> Bool
}

extension ReplicatedKeyValueStore: UbiquitousKeyValueStoring {}

/// An app's favourites, kept in the key-value store.
final class FavouritesController {
    static let key = "FavouriteCounties"
    private let store: any UbiquitousKeyValueStoring

    init(store: any UbiquitousKeyValueStoring) {
        self.store = store
    }

    var favourites: [String] {
        (store.array(forKey: Self.key) as? [String]) ?? []
    }

    func add(_ county: String) {
        guard !favourites.contains(county) else { return }
        store.set(favourites + [county], forKey: Self.key)
        store.synchronize()
    }

    func remove(_ county: String) {
        store.set(favourites.filter { $0 != county }, forKey: Self.key)
        store.synchronize()
    }
}

@Suite("An app's favourites controller on the real store")
struct FavouritesAppTests {
    @Test func addingAndRemovingFavouritesPersistsInTheStore() {
        ReplicatedKeyValueStore.withBlankStore { store in
            let controller = FavouritesController(store: store)
            #expect(controller.favourites.isEmpty)
            controller.add("Surrey")
            controller.add("Kent")
            controller.add("Surrey")
            #expect(controller.favourites == ["Surrey", "Kent"])
            controller.remove("Surrey")
            #expect(controller.favourites == ["Kent"])
            // A second controller on the same store sees the same data.
            #expect(FavouritesController(store: store).favourites == ["Kent"])
            #expect(store.array(forKey: FavouritesController.key) as? [String] == ["Kent"])
        }
    }
}

@Suite("The favourites controller on two devices through an in-process hub")
struct FavouritesTwoDeviceTests {
    @Test func aFavouriteAddedOnOneDeviceAppearsOnTheOther() {
        let hub = InMemoryHub(clock: ManualClock())
        let phone = FavouritesController(store: ReplicatedKeyValueStore(replicaID: "phone", hub: hub, clock: ManualClock()))
        let tabletStore = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub, clock: ManualClock())
        let tablet = FavouritesController(store: tabletStore)
        let received = NotificationRecorder(tabletStore)
        phone.add("Surrey")      // add() synchronizes, as apps do after a change
        tabletStore.synchronize()
        #expect(tablet.favourites == ["Surrey"])
        #expect(received.items == [NotificationRecorder.Item(reason: ReplicatedKeyValueStore.serverChange, keys: [FavouritesController.key])])
    }

    @Test func concurrentAddsOnBothDevicesAreBothKeptUnderAUnionPolicy() {
        // The app chooses a policy that unions concurrent lists (in the order of first
        // appearance across the canonically ordered siblings), so no favourite is lost.
        var policies = MergePolicies()
        policies.setPolicy(.custom("union") { siblings in
            var union: [Value] = []
            for case .array(let items)? in siblings.map(\.value) {
                for item in items where !union.contains(item) { union.append(item) }
            }
            return .array(union)
        }, forKey: FavouritesController.key)
        let hub = InMemoryHub(clock: ManualClock())
        let phoneStore = ReplicatedKeyValueStore(replicaID: "phone", hub: hub, policies: policies, clock: ManualClock())
        let tabletStore = ReplicatedKeyValueStore(replicaID: "tablet", hub: hub, policies: policies, clock: ManualClock())
        let phone = FavouritesController(store: phoneStore)
        let tablet = FavouritesController(store: tabletStore)
        hub.isReachable = false            // both devices offline
        phone.add("Surrey")
        tablet.add("Kent")
        hub.isReachable = true
        for store in [phoneStore, tabletStore, phoneStore] { store.synchronize() }
        #expect(phone.favourites == ["Surrey", "Kent"])
        #expect(tablet.favourites == ["Surrey", "Kent"])
        // Under last-writer-wins one list would win; the siblings show that both exist.
        #expect(phoneStore.siblings(forKey: FavouritesController.key).count == 2)
        // The next add writes the union, which supersedes both siblings.
        tablet.add("Devon")
        phoneStore.synchronize()
        #expect(phone.favourites == ["Surrey", "Kent", "Devon"])
        #expect(phoneStore.siblings(forKey: FavouritesController.key).count == 1)
    }
}
