/// Why a store's values changed other than by a local write, as
/// `NSUbiquitousKeyValueStore` reports it. The raw values are Apple's.
public enum ChangeReason: Int, Hashable, Sendable, CustomStringConvertible {
    /// Another device's writes arrived.
    case serverChange = 0
    /// The first sync after the store (re)joined replaced what it held.
    case initialSyncChange = 1
    /// Writes were refused or reverted because they would break the quota.
    case quotaViolationChange = 2
    /// The store switched to another account's data.
    case accountChange = 3

    public var description: String {
        switch self {
        case .serverChange: return "serverChange"
        case .initialSyncChange: return "initialSyncChange"
        case .quotaViolationChange: return "quotaViolationChange"
        case .accountChange: return "accountChange"
        }
    }
}

/// A change the app did not make itself: the reason and the keys whose visible values
/// changed (or, for quota violations, were refused or reverted).
public struct ExternalChange: Hashable, Sendable {
    /// Why the values changed.
    public var reason: ChangeReason
    /// The keys, in UTF-8 byte order.
    public var keys: [String]

    /// Creates an external change.
    public init(reason: ChangeReason, keys: [String]) {
        self.reason = reason
        self.keys = keys
    }
}

/// Everything a store tells its observers.
public enum StoreEvent: Hashable, Sendable {
    /// Values changed from outside: posted as `didChangeExternallyNotification` too.
    case externalChange(ExternalChange)
    /// A merge left a key with concurrent siblings.
    case conflict(Conflict)
    /// A non-throwing write (`set(_:forKey:)`) was refused for a reason other than the
    /// quota (an invalid value or key, a storage failure); the store is unchanged.
    case writeRejected(key: String, error: ConvergeError)
}

/// Keeps an observation alive; call ``cancel()`` (or drop every reference) to stop it.
public final class ObservationToken: Sendable {
    private let onCancel: @Sendable () -> Void

    init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = onCancel
    }

    /// Stops the observation. Calling it twice is harmless.
    public func cancel() { onCancel() }

    deinit { onCancel() }
}
