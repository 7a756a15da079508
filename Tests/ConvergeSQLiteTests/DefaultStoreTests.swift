import Converge
import ConvergeSQLite
import Foundation
import Testing

/// `ReplicatedKeyValueStore.openDefault()`: what Converge offers where
/// `NSUbiquitousKeyValueStore.default` users look for a shared store.
@Suite("The default store")
struct DefaultStoreTests {
    @Test func everyCallInAProcessSharesOneDurableStoreWithOneRecordedReplicaID() throws {
        let folder = temporaryFolder().appendingPathComponent("app/Converge")
        let store = try ReplicatedKeyValueStore.openDefault(folder: folder)
        #expect(try ReplicatedKeyValueStore.openDefault(folder: folder) === store)
        store.set("dark", forKey: "theme")
        // Another process (here another storage object on the file) sees the data and the
        // replica ID recorded at creation.
        let file = folder.appendingPathComponent("default.sqlite").path
        let other = try SQLiteStorage(path: file)
        #expect(try other.recordedReplicaID(recordingIfAbsent: "someone-else") == store.replicaID)
        let reopened = try ReplicatedKeyValueStore(replicaID: store.replicaID, storage: other)
        #expect(reopened.string(forKey: "theme") == "dark")
        // Another folder is another store.
        let elsewhere = try ReplicatedKeyValueStore.openDefault(folder: temporaryFolder().appendingPathComponent("other"))
        #expect(elsewhere !== store && elsewhere.string(forKey: "theme") == nil)
        #expect(ReplicatedKeyValueStore.defaultFolder.lastPathComponent == "Converge")
    }

    @Test func aFolderThatCannotBeMadeThrowsAndCachesNothing() throws {
        let blocked = temporaryFolder()
        try FileManager.default.createDirectory(at: blocked, withIntermediateDirectories: true)
        let file = blocked.appendingPathComponent("file")
        try Data("x".utf8).write(to: file)
        #expect(throws: ConvergeError.self) { try ReplicatedKeyValueStore.openDefault(folder: file.appendingPathComponent("Converge")) }
        // A damaged file is refused, not replaced by an empty store.
        let damaged = blocked.appendingPathComponent("damaged")
        try FileManager.default.createDirectory(at: damaged, withIntermediateDirectories: true)
        try Data(repeating: 0xAB, count: 8_192).write(to: damaged.appendingPathComponent("default.sqlite"))
        #expect(throws: ConvergeError.self) { try ReplicatedKeyValueStore.openDefault(folder: damaged) }
        #expect(try Data(contentsOf: damaged.appendingPathComponent("default.sqlite")) == Data(repeating: 0xAB, count: 8_192))
    }
}
