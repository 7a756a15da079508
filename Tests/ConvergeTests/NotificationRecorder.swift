import Converge
import Foundation
import Synchronization

/// Records every `didChangeExternallyNotification` a store posts, from any thread, until
/// it is released: what an app's observer would see.
final class NotificationRecorder {
    struct Item: Hashable, Sendable {
        var reason: Int?
        var keys: [String]?
        var conflicted: [String]? = []
    }

    /// Shared with the observer block, which may run on any thread.
    private final class Inbox: Sendable {
        let items = Mutex<[Item]>([])
    }

    private let inbox = Inbox()
    private var observer: (any NSObjectProtocol)?

    init(_ store: ReplicatedKeyValueStore) {
        observer = NotificationCenter.default.addObserver(
            forName: ReplicatedKeyValueStore.didChangeExternallyNotification, object: store, queue: nil
        ) { [inbox] note in
            let item = Item(reason: note.userInfo?[ReplicatedKeyValueStore.changeReasonKey] as? Int,
                            keys: note.userInfo?[ReplicatedKeyValueStore.changedKeysKey] as? [String],
                            conflicted: note.userInfo?[ReplicatedKeyValueStore.conflictedKeysKey] as? [String])
            inbox.items.withLock { $0.append(item) }
        }
    }

    var items: [Item] { inbox.items.withLock { $0 } }

    deinit {
        if let observer { NotificationCenter.default.removeObserver(observer) }
    }
}
