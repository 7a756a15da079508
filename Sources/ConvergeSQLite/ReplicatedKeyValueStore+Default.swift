import Converge
import Foundation
import Synchronization

/// The store an app opens without naming anything, where `NSUbiquitousKeyValueStore.default`
/// users look for one.
///
/// Converge has no `default` property: opening a durable store can fail (a full disk, a
/// damaged file), and a property that cannot throw would have to hide that, or fall back
/// to a store that forgets. Instead ``openDefault(folder:quota:policies:)`` opens the
/// default store, once per process, and throws what went wrong; call it at launch and pass
/// the store on (or put it in your app's environment).
extension ReplicatedKeyValueStore {
    /// The stores opened by ``openDefault(folder:quota:policies:)``, by file path.
    private static let defaultStores = Mutex<[String: ReplicatedKeyValueStore]>([:])

    /// The folder the default store lives in: the user's Application Support folder on
    /// Apple platforms, `$XDG_DATA_HOME` (or `~/.local/share`) on Linux, each with the
    /// app's bundle identifier (or process name) and `Converge`.
    public static var defaultFolder: URL {
        let app = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        #if canImport(Darwin)
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent("Library/Application Support")
        #else
        let base = ProcessInfo.processInfo.environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".local/share")
        #endif
        return base.appendingPathComponent(app).appendingPathComponent("Converge")
    }

    /// Opens this app's default store, durable on SQLite in `folder`
    /// (`default.sqlite`), creating it on first use with a random replica ID that later
    /// opens reuse. Every call in a process with the same folder returns the same object,
    /// so the app's code shares one store as it would share `.default`; other processes
    /// (a widget, an extension) opening the same file share its data too.
    ///
    /// ```swift
    /// let store = try ReplicatedKeyValueStore.openDefault()
    /// store.set("dark", forKey: "theme")
    /// ```
    ///
    /// - Parameters:
    ///   - folder: Where the store lives; ``defaultFolder`` if `nil`.
    ///   - quota: The limits of local writes (iCloud's by default), used by the first call.
    ///   - policies: How reads resolve concurrent values, used by the first call.
    /// - Throws: ``ConvergeError/storage(_:)`` if the folder cannot be made or the file
    ///   cannot be opened; nothing is replaced by an empty store.
    public static func openDefault(folder: URL? = nil, quota: Quota = .iCloud,
                                   policies: MergePolicies = MergePolicies()) throws(ConvergeError) -> ReplicatedKeyValueStore {
        let folder = folder ?? defaultFolder
        let path = folder.appendingPathComponent("default.sqlite").path
        return try defaultStores.withLock { (stores: inout [String: ReplicatedKeyValueStore]) throws(ConvergeError) -> ReplicatedKeyValueStore in
            if let store = stores[path] { return store }
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                throw .storage(.cannotOpen, path: folder.path, operation: .create, detail: error.localizedDescription)
            }
            let storage = try SQLiteStorage(path: path)
            let replica = try storage.recordedReplicaID(recordingIfAbsent: ReplicaID("d" + String(UInt64.random(in: 0...UInt64.max), radix: 16))!)
            let store = try ReplicatedKeyValueStore(replicaID: replica, storage: storage, quota: quota, policies: policies)
            stores[path] = store
            return store
        }
    }
}

extension SQLiteStorage {
    /// The metadata record of the replica ID a store file belongs to.
    static let replicaIDKey = "replica-id"

    /// The replica ID recorded in this file, or `candidate` after recording it if none is.
    ///
    /// Read and recorded in one write transaction, so processes opening a new file at once
    /// agree on one ID: the first records it, the others find it.
    ///
    /// - Throws: The storage's error.
    public func recordedReplicaID(recordingIfAbsent candidate: ReplicaID) throws(ConvergeError) -> ReplicaID {
        var recorded = candidate
        _ = try write(since: nil) { (catchUp: StorageCatchUp) throws(ConvergeError) -> StorageUpdate? in
            var stored = StoredState()
            if case .replaceAll(let state)? = catchUp.update { stored = state }
            if let existing = stored.metadata[Self.replicaIDKey].flatMap({ ReplicaID(String(decoding: $0, as: UTF8.self)) }) {
                recorded = existing
                return nil
            }
            return .change(StorageChange(clock: stored.clock,
                                         metadata: [Self.replicaIDKey: Array(candidate.rawValue.utf8)]))
        }
        return recorded
    }
}
