import Observation

/// One key of a store as an observable Swift value, for SwiftUI and any code that uses the
/// Observation framework (on Linux too): reading ``value`` is tracked, assigning it writes
/// the store, and a change from anywhere (this object, another device, another process)
/// updates it on the main actor.
///
/// ```swift
/// @MainActor @Observable final class Settings {
///     let theme: ReplicatedValue<String>
///     init(store: ReplicatedKeyValueStore) {
///         theme = ReplicatedValue(store: store, key: "theme", default: "light")
///     }
/// }
/// // In a view: Text(settings.theme.value); settings.theme.value = "dark"
/// ```
///
/// The value is `T` decoded from the key's visible value (``ReplicatedKeyValueStore/decode(_:forKey:)``),
/// or `defaultValue` while the key is absent or holds a value of another shape. A write the
/// store refuses (the quota) leaves ``value`` at what the store holds, and is reported as the
/// compatible setters report it.
@MainActor
@Observable
public final class ReplicatedValue<T: Codable & Equatable & Sendable> {
    /// The store the key lives in.
    @ObservationIgnored public let store: ReplicatedKeyValueStore
    /// The key.
    @ObservationIgnored public let key: String
    /// What ``value`` is while the key is absent.
    @ObservationIgnored public let defaultValue: T

    /// The key's value; assigning writes it to the store.
    public var value: T {
        get { current }
        set {
            store.set(encodingOrReporting: newValue, forKey: key)
            current = Self.read(store, key, defaultValue)
        }
    }

    private var current: T
    @ObservationIgnored private var follower: Task<Void, Never>?

    /// Follows `key` of `store`.
    ///
    /// - Parameters:
    ///   - store: The store.
    ///   - key: The key.
    ///   - defaultValue: The value while the key is absent (or not a `T`).
    public init(store: ReplicatedKeyValueStore, key: String, default defaultValue: T) {
        self.store = store
        self.key = key
        self.defaultValue = defaultValue
        current = Self.read(store, key, defaultValue)
        let changes = store.values(forKey: key)
        follower = Task { [weak self] in
            for await _ in changes {
                guard let self else { return }
                let latest = Self.read(store, key, defaultValue)
                if latest != self.current { self.current = latest }
            }
        }
    }

    isolated deinit {
        follower?.cancel()
    }

    private static func read(_ store: ReplicatedKeyValueStore, _ key: String, _ defaultValue: T) -> T {
        ((try? store.decode(T.self, forKey: key)) ?? nil) ?? defaultValue
    }
}

/// A property backed by one key of a store, as `@AppStorage` is backed by `UserDefaults`:
/// reads decode the key's visible value (or give the default), assignments write it.
///
/// ```swift
/// struct Preferences {
///     @Replicated(store: store, key: "fontSize") var fontSize = 14
/// }
/// ```
///
/// For views that must update when the value changes, use ``ReplicatedValue``, which the
/// Observation framework tracks.
@propertyWrapper
public struct Replicated<T: Codable & Sendable>: Sendable {
    /// The store the key lives in.
    public let store: ReplicatedKeyValueStore
    /// The key.
    public let key: String
    /// What the property reads while the key is absent.
    public let defaultValue: T

    /// Backs the property with `key` of `store`.
    public init(wrappedValue: T, store: ReplicatedKeyValueStore, key: String) {
        self.store = store
        self.key = key
        defaultValue = wrappedValue
    }

    /// The key's value, or the default; assigning writes it (a refused write is reported
    /// as the compatible setters report it, and changes nothing).
    public var wrappedValue: T {
        get { ((try? store.decode(T.self, forKey: key)) ?? nil) ?? defaultValue }
        nonmutating set { store.set(encodingOrReporting: newValue, forKey: key) }
    }
}

extension ReplicatedKeyValueStore {
    /// Writes `instance` for `key`, reporting a refusal as the compatible setters do
    /// (a ``StoreEvent/writeRejected(key:error:)`` event, or `quotaViolationChange`).
    func set<T: Encodable>(encodingOrReporting instance: T, forKey key: String) {
        do {
            setReportingErrors(try Value(encoding: instance), forKey: key)
        } catch {
            reportRejected(key: key, error)
        }
    }
}
