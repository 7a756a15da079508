import Converge
import ConvergeSharedFolder
import Testing

/// The code of `ConvergeSharedFolder.docc/GettingStarted.md`, so the article's example runs.
@Suite("The shared folder's getting-started article")
struct GettingStartedTests {
    @Test func twoStoresSyncThroughOneFolder() throws {
        let folder = InMemoryFolder()   // FileSystemFolder(path:) on disk
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop")
        let phone = ReplicatedKeyValueStore(replicaID: "phone")
        try laptop.setValue(.string("dark"), forKey: "theme")
        try SharedFolderSync(files: folder).synchronize(laptop)   // writes laptop's file
        let report = try SharedFolderSync(files: folder).synchronize(phone)
        #expect(report.changedKeys == ["theme"])
        #expect(phone.string(forKey: "theme") == "dark")
    }
}
