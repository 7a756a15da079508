import Foundation

/// The `NSUbiquitousKeyValueStore`-compatible surface: the same names, overloads, getter
/// conversions and notification, so that code written against Apple's store (or a
/// protocol extracted from it) works unchanged.
extension ReplicatedKeyValueStore {
    /// Posted on `NotificationCenter.default`, with the store as object, when values
    /// change from outside: another device's writes, an initial sync, a quota violation
    /// or an account switch.
    public static let didChangeExternallyNotification = Notification.Name("ReplicatedKeyValueStoreDidChangeExternallyNotification")
    /// The userInfo key of the reason, an `Int`: ``ChangeReason`` raw values.
    public static let changeReasonKey = "ReplicatedKeyValueStoreChangeReasonKey"
    /// The userInfo key of the changed keys, a `[String]`.
    public static let changedKeysKey = "ReplicatedKeyValueStoreChangedKeysKey"
    /// The userInfo key of the changed keys that hold concurrent values after the change, a
    /// `[String]` in UTF-8 byte order: the conflicts an app that only listens to the
    /// notification should look at (``siblings(forKey:)`` gives every value).
    public static let conflictedKeysKey = "ReplicatedKeyValueStoreConflictedKeysKey"

    /// `serverChange`, as in `NSUbiquitousKeyValueStoreServerChange`.
    public static let serverChange = ChangeReason.serverChange.rawValue
    /// `initialSyncChange`.
    public static let initialSyncChange = ChangeReason.initialSyncChange.rawValue
    /// `quotaViolationChange`.
    public static let quotaViolationChange = ChangeReason.quotaViolationChange.rawValue
    /// `accountChange`.
    public static let accountChange = ChangeReason.accountChange.rawValue

    // MARK: Writes

    /// Stores a property-list object (`nil` removes the key).
    ///
    /// A write over the quota is refused and posts a `didChangeExternallyNotification`
    /// with reason `quotaViolationChange`; a non-property-list object is refused with a
    /// ``StoreEvent/writeRejected(key:error:)`` event. Either way nothing changes. Use
    /// ``setValue(_:forKey:)`` to get the error thrown instead.
    public func set(_ value: Any?, forKey key: String) {
        guard let value else { return setReportingErrors(nil, forKey: key) }
        do {
            setReportingErrors(try Value(propertyList: value), forKey: key)
        } catch {
            reportRejected(key: key, error)
        }
    }

    /// Stores a string (`nil` removes the key).
    public func set(_ value: String?, forKey key: String) {
        setReportingErrors(value.map(Value.string), forKey: key)
    }

    /// Stores data (`nil` removes the key).
    public func set(_ value: Data?, forKey key: String) {
        setReportingErrors(value.map(Value.data), forKey: key)
    }

    /// Stores an array of property-list objects (`nil` removes the key).
    public func set(_ value: [Any]?, forKey key: String) {
        set(value as Any?, forKey: key)
    }

    /// Stores a dictionary of property-list objects (`nil` removes the key).
    public func set(_ value: [String: Any]?, forKey key: String) {
        set(value as Any?, forKey: key)
    }

    /// Stores a Boolean.
    public func set(_ value: Bool, forKey key: String) {
        setReportingErrors(.bool(value), forKey: key)
    }

    /// Stores a double (NaN is refused).
    public func set(_ value: Double, forKey key: String) {
        setReportingErrors(.double(value), forKey: key)
    }

    /// Stores an integer.
    public func set(_ value: Int64, forKey key: String) {
        setReportingErrors(.integer(value), forKey: key)
    }

    /// Stores an integer, as `UserDefaults.set(_:forKey:)` does for an `Int`.
    public func set(_ value: Int, forKey key: String) {
        setReportingErrors(.integer(Int64(value)), forKey: key)
    }

    /// Stores a float, as a double (NaN is refused).
    public func set(_ value: Float, forKey key: String) {
        setReportingErrors(.double(Double(value)), forKey: key)
    }

    /// Stores a URL as its absolute string (`nil` removes the key); ``url(forKey:)`` reads
    /// it back.
    public func set(_ url: URL?, forKey key: String) {
        setReportingErrors(url.map { .string($0.absoluteString) }, forKey: key)
    }

    /// Removes every key, as one synced change (each key gets a tombstone, so the removal
    /// reaches the other devices). A storage failure changes nothing and is reported as a
    /// ``StoreEvent/writeRejected(key:error:)`` event with an empty key; use
    /// ``setValues(_:)`` to get the error thrown instead.
    public func removeAll() {
        do {
            try setValues(values.keys.sortedByUTF8().map { (key: $0, value: nil) })
        } catch {
            reportRejected(key: "", error)
        }
    }

    /// Removes `key`; removing an absent key does nothing.
    public func removeObject(forKey key: String) {
        setReportingErrors(nil, forKey: key)
    }

    // MARK: Reads

    /// The value of `key` as Foundation objects (numbers as `NSNumber`), or `nil`.
    public func object(forKey key: String) -> Any? {
        value(forKey: key)?.propertyListObject
    }

    /// The string of `key`; numbers are converted to strings; `nil` for other types.
    public func string(forKey key: String) -> String? {
        value(forKey: key)?.stringConversion
    }

    /// The array of `key`, or `nil` if absent or not an array.
    ///
    /// Like every getter, it reads the value the key's merge policy resolves when devices
    /// wrote it concurrently: under ``MergePolicy/multiValue`` that is an array of every
    /// concurrent value, so two concurrent arrays read as `[["Devon"], ["Cornwall"]]`. Use
    /// ``siblings(forKey:)`` to read each concurrent write with its dot and timestamp.
    public func array(forKey key: String) -> [Any]? {
        guard case .array(let elements)? = value(forKey: key) else { return nil }
        return elements.map(\.propertyListObject)
    }

    /// The dictionary of `key`, or `nil` if absent or not a dictionary.
    public func dictionary(forKey key: String) -> [String: Any]? {
        guard case .dictionary(let members)? = value(forKey: key) else { return nil }
        return members.mapValues(\.propertyListObject)
    }

    /// The data of `key`, or `nil` if absent or not data.
    public func data(forKey key: String) -> Data? {
        guard case .data(let bytes)? = value(forKey: key) else { return nil }
        return bytes
    }

    /// The integer of `key` (see ``Value/longLongConversion``), 0 if absent.
    public func longLong(forKey key: String) -> Int64 {
        value(forKey: key)?.longLongConversion ?? 0
    }

    /// The double of `key` (see ``Value/doubleConversion``), 0 if absent.
    public func double(forKey key: String) -> Double {
        value(forKey: key)?.doubleConversion ?? 0
    }

    /// The integer of `key`, as `UserDefaults.integer(forKey:)`: the conversions of
    /// ``longLong(forKey:)``, 0 if absent.
    public func integer(forKey key: String) -> Int {
        Int(truncatingIfNeeded: longLong(forKey: key))
    }

    /// The float of `key` (see ``Value/doubleConversion``), 0 if absent.
    public func float(forKey key: String) -> Float {
        Float(double(forKey: key))
    }

    /// The strings of `key`, or `nil` if absent, not an array, or holding anything but
    /// strings (as `UserDefaults.stringArray(forKey:)`).
    public func stringArray(forKey key: String) -> [String]? {
        guard case .array(let elements)? = value(forKey: key) else { return nil }
        var strings: [String] = []
        for element in elements {
            guard case .string(let string) = element else { return nil }
            strings.append(string)
        }
        return strings
    }

    /// The URL of `key`, as `UserDefaults.url(forKey:)`: a string with a scheme is read as
    /// that URL, any other string as a file path (a leading "~" is the home folder); `nil`
    /// if absent or not a string.
    public func url(forKey key: String) -> URL? {
        guard case .string(let text)? = value(forKey: key), !text.isEmpty else { return nil }
        if let url = URL(string: text), url.scheme != nil { return url }
        return URL(fileURLWithPath: (text as NSString).expandingTildeInPath)
    }

    /// The Boolean of `key` (see ``Value/boolConversion``), `false` if absent.
    public func bool(forKey key: String) -> Bool {
        value(forKey: key)?.boolConversion ?? false
    }

    /// Every key and value of the synced domain, as Foundation objects.
    public var dictionaryRepresentation: [String: Any] {
        values.mapValues(\.propertyListObject)
    }

    /// Makes local writes durable and, for a store attached to a hub, exchanges changes
    /// with it.
    ///
    /// Local writes are durable as soon as `set` returns, so only syncing remains. First,
    /// what other processes or store objects wrote to the same storage is taken and
    /// reported (``refresh()``). With a
    /// transport that answers at once (an ``InMemoryHub``) the exchange happens before this
    /// returns. With any other transport (a network) this schedules a ``sync()`` in the
    /// background and returns at once, as Apple's store only tells iCloud that changes are
    /// ready; a sync already scheduled and not yet started is not scheduled twice. Call
    /// `try await sync()` to wait for an exchange and see its error.
    ///
    /// - Returns: `true` if everything succeeded; `false` if the exchange failed (the hub
    ///   was unreachable) or, for a transport that cannot answer at once, if the last
    ///   scheduled sync failed. The next call retries; no write is lost.
    @discardableResult
    public func synchronize() -> Bool {
        synchronizeThroughTransport()
    }

    /// The same events as `didChangeExternallyNotification`, for Swift concurrency.
    ///
    /// Each call returns a new stream that receives every later change until it is
    /// cancelled or the store is released.
    public func externalChanges() -> AsyncStream<ExternalChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: ExternalChange.self, bufferingPolicy: .bufferingNewest(1_024))
        let token = observe { event in
            if case .externalChange(let change) = event { continuation.yield(change) }
        }
        continuation.onTermination = { _ in token.cancel() }
        return stream
    }

    /// Every conflict, for Swift concurrency: a new stream per call.
    public func conflicts() -> AsyncStream<Conflict> {
        let (stream, continuation) = AsyncStream.makeStream(of: Conflict.self, bufferingPolicy: .bufferingNewest(1_024))
        let token = observe { event in
            if case .conflict(let conflict) = event { continuation.yield(conflict) }
        }
        continuation.onTermination = { _ in token.cancel() }
        return stream
    }
}
