import Converge
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
