import Converge
import Foundation
import Testing

/// The getters and setters people reach for from `UserDefaults`, with its conversions, and
/// conflicts named in the notification.
@Suite("UserDefaults spellings: integer, float, stringArray, url, removeAll, conflicted keys")
struct UserDefaultsSpellingTests {
    static func store(_ id: ReplicaID = "defaults", hub: InMemoryHub? = nil) -> ReplicatedKeyValueStore {
        if let hub { return ReplicatedKeyValueStore(replicaID: id, hub: hub, clock: ManualClock()) }
        return ReplicatedKeyValueStore(replicaID: id, clock: ManualClock())
    }

    @Test func integerAndFloatConvertAsLongLongAndDoubleDo() {
        let store = Self.store()
        store.set(42, forKey: "int")
        store.set(Float(2.5), forKey: "float")
        store.set("17", forKey: "text")
        store.set(true, forKey: "flag")
        #expect(store.integer(forKey: "int") == 42 && store.value(forKey: "int") == .integer(42))
        #expect(store.integer(forKey: "float") == 2 && store.float(forKey: "float") == 2.5)
        #expect(store.integer(forKey: "text") == 17 && store.float(forKey: "text") == 17)
        #expect(store.integer(forKey: "flag") == 1 && store.integer(forKey: "absent") == 0 && store.float(forKey: "absent") == 0)
    }

    @Test func stringArrayIsNilUnlessEveryElementIsAString() {
        let store = Self.store()
        store.set(["a", "b"] as [Any], forKey: "strings")
        store.set(["a", 1] as [Any], forKey: "mixed")
        store.set("a", forKey: "single")
        #expect(store.stringArray(forKey: "strings") == ["a", "b"])
        #expect(store.stringArray(forKey: "mixed") == nil)
        #expect(store.stringArray(forKey: "single") == nil && store.stringArray(forKey: "absent") == nil)
        store.set([] as [Any], forKey: "empty")
        #expect(store.stringArray(forKey: "empty") == [])
    }

    @Test func urlsRoundTripAndPathsReadAsFileURLs() {
        let store = Self.store()
        let web = URL(string: "https://example.com/a?b=c")!
        let file = URL(fileURLWithPath: "/tmp/some file.txt")
        store.set(web, forKey: "web")
        store.set(file, forKey: "file")
        store.set("/var/data", forKey: "path")
        store.set("~/notes", forKey: "home")
        #expect(store.url(forKey: "web") == web)
        #expect(store.url(forKey: "file") == file)
        #expect(store.url(forKey: "path") == URL(fileURLWithPath: "/var/data"))
        #expect(store.url(forKey: "home")?.path == NSHomeDirectory() + "/notes")
        store.set(nil as URL?, forKey: "web")
        #expect(store.url(forKey: "web") == nil && store.url(forKey: "absent") == nil)
        store.set(Int64(3), forKey: "number")
        #expect(store.url(forKey: "number") == nil)
    }

    @Test func removeAllIsASyncedRemovalOfEveryKey() throws {
        let hub = InMemoryHub(clock: ManualClock())
        let phone = Self.store("phone", hub: hub), laptop = Self.store("laptop", hub: hub)
        phone.set("x", forKey: "a")
        phone.set(1, forKey: "b")
        for store in [phone, laptop] { #expect(store.synchronize()) }
        #expect(laptop.values.count == 2)
        phone.removeAll()
        #expect(phone.values.isEmpty)
        for store in [phone, laptop] { #expect(store.synchronize()) }
        #expect(laptop.values.isEmpty)
    }

    @Test func theNotificationNamesTheKeysLeftInConflict() throws {
        let hub = InMemoryHub(clock: ManualClock())
        let phone = ReplicatedKeyValueStore(replicaID: "phone", hub: hub, policies: MergePolicies(default: .multiValue), clock: ManualClock())
        let laptop = Self.store("laptop", hub: hub)
        phone.set("Devon", forKey: "county")
        laptop.set("Cornwall", forKey: "county")
        laptop.set("tea", forKey: "drink")
        #expect(laptop.synchronize())
        let recorder = NotificationRecorder(phone)
        #expect(phone.synchronize())
        let change = try #require(recorder.items.last)
        #expect(change.keys == ["county", "drink"])
        #expect(change.conflicted == ["county"])
    }
}
