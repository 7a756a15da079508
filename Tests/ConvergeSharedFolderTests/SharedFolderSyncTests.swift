import Converge
import ConvergeSharedFolder
import Foundation
import Synchronization
import Testing

/// A kind of shared folder: every test body runs on each (as GRDB runs one body against
/// every database kind).
enum FolderKind: String, CaseIterable, CustomTestStringConvertible {
    case inMemory, fileSystem

    func make(_ name: String = #function) -> any SharedFolderFiles {
        switch self {
        case .inMemory:
            return InMemoryFolder()
        case .fileSystem:
            let url = FileManager.default.temporaryDirectory
                .appendingPathComponent("converge-folder-\(getpid())-\(name.filter { $0.isLetter })-\(UInt32.random(in: 0...UInt32.max))")
            return FileSystemFolder(path: url.path)
        }
    }

    var testDescription: String { rawValue }
}

/// One reader's view of a folder from which some files are held back, as a file-sync
/// service delivers them late or out of order.
final class DelayedView: SharedFolderFiles {
    let folder: any SharedFolderFiles
    let held = Mutex<Set<[String]>>([])

    init(_ folder: any SharedFolderFiles) { self.folder = folder }

    func names(in path: [String]) throws(ConvergeError) -> [String] {
        let held = held.withLock { $0 }
        return try folder.names(in: path).filter { !held.contains(path + [$0]) }
    }

    func contents(of path: [String]) throws(ConvergeError) -> [UInt8]? {
        held.withLock { $0.contains(path) } ? nil : try folder.contents(of: path)
    }

    func write(_ bytes: [UInt8], to path: [String]) throws(ConvergeError) { try folder.write(bytes, to: path) }
    func remove(_ path: [String]) throws(ConvergeError) { try folder.remove(path) }
    func describe(_ path: [String]) -> String { folder.describe(path) }
}

@Suite("The shared-folder transport: a mesh whose messages are files")
struct SharedFolderSyncTests {
    let clock = ManualClock()

    /// A folder holds files older versions wrote (message format versions 3 and 4): they are
    /// still read, by other replicas and by the replica that wrote them.
    @Test(arguments: [UInt8(3), 4])
    func filesOfOlderMessageFormatVersionsAreStillRead(version: UInt8) throws {
        let files = InMemoryFolder()
        let sync = SharedFolderSync(files: files)
        let alice = ReplicatedKeyValueStore(replicaID: "alice", clock: clock)
        try alice.setValue(.string("from version \(version)"), forKey: "old")
        try sync.synchronize(alice)
        let names = try files.names(in: ["default", "alice"])
        #expect(!names.isEmpty)
        for name in names {
            let bytes = try #require(try files.contents(of: ["default", "alice", name]))
            #expect(bytes[1] == (try SyncMessage(encoded: bytes)).writtenFormatVersion)
            var body = Array(bytes.dropLast(4))
            body[1] = version
            try files.write(CRC32C.sealed(body), to: ["default", "alice", name])
        }
        let bob = ReplicatedKeyValueStore(replicaID: "bob", clock: clock)
        let report = try sync.synchronize(bob)
        #expect(report.skipped.isEmpty, "\(report.skipped)")
        #expect(bob.value(forKey: "old") == .string("from version \(version)"))
        try alice.setValue("2", forKey: "new")
        try sync.synchronize(alice)
        #expect(alice.writerID == "alice", "alice took its own version-\(version) file for another copy's")
        try sync.synchronize(bob)
        #expect(bob.value(forKey: "new") == "2")
    }

    func store(_ id: ReplicaID, account: AccountID = .default) -> ReplicatedKeyValueStore {
        let store = ReplicatedKeyValueStore(replicaID: id, clock: clock)
        if account != .default { try! store.switchAccount(to: account) }
        return store
    }

    @Test(arguments: FolderKind.allCases)
    func aSnapshotInPartsIsTakenOnlyOnceEveryPartHasArrived(kind: FolderKind) throws {
        let folder = kind.make()
        var writer = SharedFolderSync(files: folder)
        writer.maximumFileBytes = 400
        let alice = store("alice")
        for index in 0..<40 { try alice.setValue(.string("value \(index) " + String(repeating: "x", count: index)), forKey: "key-\(index)") }
        let written = try #require(try writer.synchronize(alice).written)
        let names = try folder.names(in: ["default", "alice"]).sorted()
        #expect(names.count > 3 && names.allSatisfy { $0.hasPrefix("00000000000000000001.snapshot-") }, "\(names)")
        #expect(written.hasSuffix("00000000000000000001.snapshot-\(names.count)-of-\(names.count)"))
        // A reader missing one part takes nothing of the snapshot, then all of it.
        let view = DelayedView(folder)
        view.held.withLock { $0 = [["default", "alice", "00000000000000000001.snapshot-2-of-\(names.count)"]] }
        let bob = store("bob")
        let reader = SharedFolderSync(files: view)
        #expect(try reader.synchronize(bob).filesTaken.isEmpty)
        #expect(bob.values.isEmpty)
        view.held.withLock { $0 = [] }
        let report = try reader.synchronize(bob)
        #expect(report.filesTaken.count == names.count && report.changedKeys.count == 40)
        #expect(bob.replicatedState == alice.replicatedState)
        // Then a delta, as usual, and a snapshot in parts again when compacting.
        try alice.setValue("new", forKey: "key-new")
        #expect(try writer.synchronize(alice).written?.hasSuffix("00000000000000000002.delta") == true)
        try reader.synchronize(bob)
        #expect(bob.value(forKey: "key-new") == "new")
    }

    @Test func partsThatDisagreeAreSkippedAndReported() throws {
        let folder = InMemoryFolder()
        var writer = SharedFolderSync(files: folder)
        writer.maximumFileBytes = 300
        let alice = store("alice")
        for index in 0..<20 { try alice.setValue(.integer(Int64(index)), forKey: "key-\(index)") }
        try writer.synchronize(alice)
        // Part 1 replaced by a part of another snapshot (another context).
        let other = store("alice")
        try other.setValue(.integer(99), forKey: "key-0")
        let gossip = try #require(other.broadcast(after: nil))
        let names = try folder.names(in: ["default", "alice"]).sorted()
        try folder.write(try SyncMessage.gossip(gossip).encoded(), to: ["default", "alice", names[0]])
        let report = try SharedFolderSync(files: folder).synchronize(store("bob"))
        #expect(report.filesTaken.isEmpty)
        #expect(report.skipped.count == 1 && report.skipped[0].contains("carry different contexts"), "\(report.skipped)")
    }

    @Test(arguments: FolderKind.allCases)
    func storesConvergeThroughTheFolderWithChangesReported(kind: FolderKind) throws {
        let sync = SharedFolderSync(files: kind.make())
        let (alice, bob, carol) = (store("alice"), store("bob"), store("carol"))
        try alice.setValue("hello", forKey: "greeting")
        try bob.setValue(1, forKey: "count")
        let first = try sync.synchronize(alice)
        #expect(first.written?.hasSuffix("default/alice/00000000000000000001.snapshot") == true)
        let second = try sync.synchronize(bob)
        #expect(second.replicasRead == ["alice"] && second.changedKeys == ["greeting"])
        try sync.synchronize(carol)
        try sync.synchronize(alice)
        // What alice took from bob, she passes on (a mesh is transitive); then nothing is new.
        #expect(try sync.synchronize(alice).written != nil)
        #expect(try sync.synchronize(alice).written == nil)
        #expect(alice.replicatedState == bob.replicatedState && bob.replicatedState == carol.replicatedState)
        #expect(carol.value(forKey: "count") == 1 && carol.value(forKey: "greeting") == "hello")
    }

    /// A reader that sees a later delta before an earlier one never applies it out of
    /// order: it waits at the gap, and takes both once the earlier one arrives.
    @Test func aLateFileDelaysTheFilesAfterItAndLosesNothing() throws {
        let folder = InMemoryFolder()
        let writer = SharedFolderSync(files: folder)
        let view = DelayedView(folder)
        let reader = SharedFolderSync(files: view)
        let alice = store("alice"), bob = store("bob")
        try alice.setValue("one", forKey: "a")
        try writer.synchronize(alice)                    // 1: snapshot
        try alice.setValue("two", forKey: "b")
        try writer.synchronize(alice)                    // 2: delta with b
        try alice.removeValue(forKey: "a")
        try alice.setValue("three", forKey: "c")
        try writer.synchronize(alice)                    // 3: delta with c and a's tombstone
        view.held.withLock { $0 = [["default", "alice", "00000000000000000002.delta"]] }
        let early = try reader.synchronize(bob)
        #expect(early.changedKeys == ["a"])
        #expect(bob.value(forKey: "c") == nil, "delta 3 was applied before delta 2")
        view.held.withLock { $0 = [] }
        try reader.synchronize(bob)
        #expect(bob.replicatedState == alice.replicatedState)
        #expect(bob.value(forKey: "a") == nil && bob.value(forKey: "b") == "two" && bob.value(forKey: "c") == "three")
    }

    /// Had delta 3 been applied before delta 2, the reader would have taken delta 3's
    /// context (which covers b's write) without b, and dropped b for good when delta 2
    /// came: the reason files are read in order.
    @Test func applyingALaterDeltaFirstWouldLoseAWrite() throws {
        let folder = InMemoryFolder()
        let sync = SharedFolderSync(files: folder)
        let alice = store("alice"), bob = store("bob")
        try alice.setValue("one", forKey: "a")
        try sync.synchronize(alice)
        try alice.setValue("two", forKey: "b")
        try sync.synchronize(alice)
        try alice.setValue("three", forKey: "c")
        try sync.synchronize(alice)
        func gossip(_ name: String) throws -> SyncGossip {
            guard case .gossip(let gossip) = try SyncMessage(encoded: try folder.contents(of: ["default", "alice", name])!) else {
                throw ConvergeError.malformed(MalformedInput(problem: .unexpectedMessage, detail: name))
            }
            return gossip
        }
        for name in ["00000000000000000001.snapshot", "00000000000000000003.delta", "00000000000000000002.delta"] {
            try bob.merge(try gossip(name).delta)
        }
        #expect(bob.value(forKey: "b") == nil, "out of order, b's write is lost")
    }

    /// Two devices under one replica ID (one's disk a copy of the other's) write one folder,
    /// and the file-sync service keeps one file per name: here the copy's delta 2 replaced
    /// alice's, which held alice's write of k15. Alice's delta 3 was computed for her delta 2,
    /// so a reader that took the copy's delta 2 would take delta 3's claim to k15's write
    /// without the write, and drop it for good when it came (`converge-sim run
    /// Simulations/device-clone.json --topology folder --seed 2`, 41 of seeds 0..<100 failed).
    /// Each delta names the context it was computed for, the reader stops at one it does not
    /// hold, and alice, finding her chain broken, writes a snapshot.
    @Test func aDeltaAfterAFileATwinReplacedWaitsForTheWritersSnapshot() throws {
        let folder = InMemoryFolder()
        let storage = InMemoryStorage()
        let alice = try ReplicatedKeyValueStore(replicaID: "alice", storage: storage, clock: clock)
        let carol = store("carol"), bob = store("bob")
        let twinView = DelayedView(folder), bobView = DelayedView(folder)
        try alice.setValue("x", forKey: "k0")
        try SharedFolderSync(files: folder).synchronize(alice)            // 1: alice's snapshot
        let twin = try ReplicatedKeyValueStore(replicaID: "alice", storage: InMemoryStorage(try storage.load()), clock: clock)
        let alicesLater: Set<[String]> = [["default", "alice", "00000000000000000002.delta"], ["default", "alice", "00000000000000000003.delta"]]
        twinView.held.withLock { $0 = alicesLater }
        bobView.held.withLock { $0 = alicesLater }
        try alice.setValue("kept?", forKey: "k15")
        try SharedFolderSync(files: folder).synchronize(alice)            // 2: alice's delta with k15
        try alice.setValue("y", forKey: "k7")
        try SharedFolderSync(files: folder).synchronize(alice)            // 3: alice's delta with k7
        try carol.setValue("c", forKey: "k1")
        try SharedFolderSync(files: folder).synchronize(carol)
        try SharedFolderSync(files: twinView).synchronize(twin)           // the twin takes carol's k1
        try SharedFolderSync(files: twinView).synchronize(twin)           // and writes its delta 2 over alice's
        bobView.held.withLock { $0 = [] }
        let early = try SharedFolderSync(files: bobView).synchronize(bob)
        #expect(early.filesTaken == ["memory:/default/alice/00000000000000000001.snapshot", "memory:/default/alice/00000000000000000002.delta",
                                     "memory:/default/carol/00000000000000000001.snapshot"],
                "bob took alice's delta 3 after the twin's delta 2")
        #expect(bob.replicatedState.context["alice"] == 1, "bob claims alice's writes it never saw")
        let rewritten = try SharedFolderSync(files: folder).synchronize(alice)
        #expect(rewritten.written == "memory:/default/alice/00000000000000000004.snapshot")
        try SharedFolderSync(files: bobView).synchronize(bob)
        #expect(bob.value(forKey: "k15") == "kept?" && bob.value(forKey: "k7") == "y" && bob.value(forKey: "k1") == "c")
        try SharedFolderSync(files: folder).synchronize(carol)
        #expect(carol.value(forKey: "k15") == "kept?")
    }

    /// A store whose disk was replaced by an empty one twice (`converge-sim run
    /// Simulations/device-restore.json --topology folder --seed 9`): the first empty store
    /// found its own file knowing d2:1 and moved on to a new writer ID, whose snapshot knows
    /// nothing of d2 (it lowered its context to fetch what it lost). The second empty store
    /// issues d2:1 again; the only sign is that snapshot, written under a later writer ID of
    /// its replica ID, so it starts a new incarnation too and re-stamps what no file of its
    /// own shows it wrote. Without that, k7's write would be lost to every reader, which
    /// holds k9's d2:1.
    @Test func aStoreUnderTheFirstWriterIDThatFindsALaterOnesFileReStampsItsWrites() throws {
        let folder = InMemoryFolder()
        let sync = SharedFolderSync(files: folder)
        let first = store("d2"), reader = store("d0")
        try first.setValue("old", forKey: "k9")
        try sync.synchronize(first)
        try sync.synchronize(reader)
        let emptied = store("d2")
        try sync.synchronize(emptied)
        #expect(emptied.writerID != "d2", "the first empty store did not find its counters reused")
        let emptiedAgain = store("d2")
        try emptiedAgain.setValue("new", forKey: "k7")
        #expect(emptiedAgain.writerID == "d2")
        try sync.synchronize(emptiedAgain)
        #expect(emptiedAgain.writerID != "d2" && emptiedAgain.writerID != emptied.writerID)
        try sync.synchronize(reader)
        try sync.synchronize(emptiedAgain)
        for store in [reader, emptiedAgain] {
            #expect(store.value(forKey: "k7") == "new" && store.value(forKey: "k9") == "old", "\(store.writerID): \(store.replicatedState)")
        }
    }

    /// A store "d2" writes `value` for `key` and publishes it, and a reader "d0" takes it.
    /// Returns the store, its storage (to back up or copy) and the reader.
    private func publishedToAReader(
        _ value: Value, forKey key: String, through sync: SharedFolderSync
    ) throws -> (original: ReplicatedKeyValueStore, storage: InMemoryStorage, reader: ReplicatedKeyValueStore) {
        let storage = InMemoryStorage()
        let original = try ReplicatedKeyValueStore(replicaID: "d2", storage: storage, clock: clock)
        let reader = store("d0")
        try original.setValue(value, forKey: key)
        try sync.synchronize(original)
        try sync.synchronize(reader)
        return (original, storage, reader)
    }

    /// A store restored from a backup taken before any reader's file acknowledged its last
    /// write (`converge-sim run Simulations/device-restore.json --topology folder --policy
    /// multi-value --seed 23`): its own file names another session for the counter it
    /// issued again after the restore, so it starts a new incarnation. The writes its file
    /// shows the same session issued are the ones
    /// readers took: they keep their dots. Re-stamped, every reader held k5 twice (its dot
    /// and the new writer ID's), which a multi-value read shows as two values, and nothing
    /// in the folder withdraws the original. The write the backup lost (k1) is fetched again,
    /// and the write made after the restore (k3) arrives under the new writer ID.
    @Test(arguments: FolderKind.allCases)
    func aRestoredStoreKeepsTheDotsOfTheWritesItsOwnFileShowsItPublished(_ kind: FolderKind) throws {
        let sync = SharedFolderSync(files: kind.make())
        let (original, storage, reader) = try publishedToAReader("five", forKey: "k5", through: sync)
        let backup = try storage.load()
        try original.setValue("one", forKey: "k1")
        try sync.synchronize(original)
        try sync.synchronize(reader)
        let restored = try ReplicatedKeyValueStore(replicaID: "d2", storage: InMemoryStorage(backup), clock: clock)
        try restored.setValue("three", forKey: "k3")
        try sync.synchronize(restored)
        #expect(restored.writerID != "d2", "the restored store did not find its counters reused")
        for _ in 0..<2 {
            try sync.synchronize(reader)
            try sync.synchronize(restored)
        }
        for store in [reader, restored] {
            let k5 = store.siblings(forKey: "k5")
            #expect(k5.map(\.dot) == [Dot(replica: "d2", counter: 1)], "\(store.writerID) holds k5 as \(k5.map(\.dot))")
            #expect(store.value(forKey: "k1") == "one" && store.value(forKey: "k3") == "three", "\(store.writerID): \(store.replicatedState)")
        }
    }

    /// A copy of a store finds its counters reused from the original's files and moves on,
    /// keeping the write both hold under its dot, and its snapshot removes the original's
    /// files (`converge-sim run Simulations/device-clone.json --topology folder --seed 28`,
    /// shrunk). The original, finding a later writer ID of its replica ID and no file of its
    /// own, re-stamps what no file shows it wrote; the copy's files relay what the copy
    /// kept of the old writer ID, with its sessions, so the original keeps that too. Without
    /// the relayed record it kept nothing under the old writer ID, took its own replaced
    /// write (d2:1) back from the copy's snapshot, and every reader held it beside the write
    /// that replaced it.
    @Test(arguments: FolderKind.allCases)
    func anOriginalWhoseFilesACopyRemovedKeepsWhatTheCopyRelaysItKept(_ kind: FolderKind) throws {
        let sync = SharedFolderSync(files: kind.make())
        let (original, storage, reader) = try publishedToAReader("first", forKey: "k5", through: sync)
        let copy = try ReplicatedKeyValueStore(replicaID: "d2", storage: InMemoryStorage(try storage.load()), clock: clock)
        try original.setValue("second", forKey: "k5")
        try sync.synchronize(original)
        try sync.synchronize(copy)
        #expect(copy.writerID != "d2" && copy.siblings(forKey: "k5").map(\.dot) == [Dot(replica: "d2", counter: 1)])
        try sync.synchronize(original)
        #expect(original.writerID != "d2" && original.writerID != copy.writerID)
        for _ in 0..<2 {
            for store in [reader, copy, original] { try sync.synchronize(store) }
        }
        for store in [reader, copy, original] {
            #expect(store.siblings(forKey: "k5").map(\.dot) == [Dot(replica: original.writerID, counter: 1)],
                    "\(store.writerID) holds k5 as \(store.siblings(forKey: "k5").map(\.dot))")
            #expect(store.value(forKey: "k5") == "second")
        }
    }

    /// Two copies of a store that parted at counter 3 both issue d2:4 and d2:5, and a reader
    /// takes the copy's. The copy finds the original's file (which replaced its own under
    /// the same name), keeps d2:1…3, re-stamps its own two writes and removes the folder. The
    /// original, not yet seeing the copy's snapshot, writes a snapshot of its own that shows
    /// d2:4 and d2:5 as its writes. The copy's relayed record goes on past what it kept, with
    /// the session it issued d2:4 under: the original re-stamps its two writes too. Kept
    /// under their dots, as the record's kept counter alone would allow, they never reached
    /// the reader, which holds the copy's writes under those dots (review of c7edec1).
    ///
    /// With files of 256 bytes the copy's snapshot is split into parts, each of which
    /// relays the record (the parts used to drop it).
    @Test(arguments: [Int?.none, 256])
    func anOriginalRestampsWhatACopysRelayedRecordShowsItIssuedToo(maximumFileBytes: Int?) throws {
        let folder = InMemoryFolder()
        func sync(_ files: any SharedFolderFiles) -> SharedFolderSync {
            var sync = SharedFolderSync(files: files)
            if let maximumFileBytes { sync.maximumFileBytes = maximumFileBytes }
            return sync
        }
        let storage = InMemoryStorage()
        let original = try ReplicatedKeyValueStore(replicaID: "d2", storage: storage, clock: clock)
        let reader = store("d0")
        let shared = Value.string(String(repeating: "s", count: 100))
        for key in ["k1", "k2", "k3"] { try original.setValue(shared, forKey: key) }
        try sync(folder).synchronize(original)
        let copy = try ReplicatedKeyValueStore(replicaID: "d2", storage: InMemoryStorage(try storage.load()), clock: clock)
        for key in ["c4", "c5"] { try copy.setValue("copy", forKey: key) }
        try sync(folder).synchronize(copy)
        try sync(folder).synchronize(reader)
        #expect(reader.value(forKey: "c4") == "copy")
        for key in ["t4", "t5"] { try original.setValue("original", forKey: key) }
        let originalView = DelayedView(folder)
        originalView.held.withLock { $0 = [["default", "d2", "00000000000000000002.delta"]] }
        try sync(originalView).synchronize(original)   // over the copy's file 2
        try sync(folder).synchronize(copy)
        #expect(copy.writerID != "d2" && original.writerID == "d2")
        let copysFiles = try folder.names(in: ["default", copy.writerID.rawValue]).map { ["default", copy.writerID.rawValue, $0] }
        originalView.held.withLock { $0 = Set(copysFiles) }
        try sync(originalView).synchronize(original)   // a snapshot of its own
        originalView.held.withLock { $0 = [] }
        for _ in 0..<3 {
            for store in [original, copy, reader] { try sync(folder).synchronize(store) }
        }
        #expect(original.writerID != "d2")
        let expected: [String: Value] = ["k1": shared, "k2": shared, "k3": shared, "c4": "copy", "c5": "copy",
                                         "t4": "original", "t5": "original"]
        for store in [reader, original, copy] {
            #expect(store.values == expected, "\(store.writerID): \(store.replicatedState)")
        }
    }

    /// The record a copy relays ends where its own writes under the old writer ID end: an
    /// original that went on writing under later sessions past that point is not taken for
    /// a second issuer of those counters (review of 160587f). The copy wrote nothing; the
    /// original wrote d2:4, then d2:5 as another store object. Compared past the record's
    /// end, its last run would have named the copy's session for d2:5, and the original
    /// would have re-stamped d2:5, which the reader holds: the value twice.
    @Test func aCopysRelayedRecordClaimsNothingPastWhatItIssued() throws {
        let folder = InMemoryFolder()
        let storage = InMemoryStorage()
        var original = try ReplicatedKeyValueStore(replicaID: "d2", storage: storage, clock: clock)
        let reader = store("d0")
        for key in ["k1", "k2", "k3"] { try original.setValue("shared", forKey: key) }
        try SharedFolderSync(files: folder).synchronize(original)
        let copy = try ReplicatedKeyValueStore(replicaID: "d2", storage: InMemoryStorage(try storage.load()), clock: clock)
        try original.setValue("four", forKey: "k4")
        try SharedFolderSync(files: folder).synchronize(original)
        original = try ReplicatedKeyValueStore(replicaID: "d2", storage: storage, clock: clock)   // another session
        try original.setValue("five", forKey: "k5")
        try SharedFolderSync(files: folder).synchronize(original)
        try SharedFolderSync(files: folder).synchronize(reader)
        try SharedFolderSync(files: folder).synchronize(copy)
        #expect(copy.writerID != "d2")
        let originalView = DelayedView(folder)
        let copysFiles = try folder.names(in: ["default", copy.writerID.rawValue]).map { ["default", copy.writerID.rawValue, $0] }
        originalView.held.withLock { $0 = Set(copysFiles) }
        try SharedFolderSync(files: originalView).synchronize(original)   // a snapshot of its own
        for _ in 0..<3 {
            for store in [original, copy, reader] { try SharedFolderSync(files: folder).synchronize(store) }
        }
        for store in [reader, original, copy] {
            #expect(store.siblings(forKey: "k5").map(\.dot) == [Dot(replica: "d2", counter: 5)], "\(store.writerID): \(store.replicatedState)")
            #expect(store.values.count == 5)
        }
    }

    /// A snapshot that names a basis (planted, or damaged into one) is refused by every reader
    /// that holds less; the writer does not take it as the head of its chain, so its next
    /// file is a snapshot again, not a delta nobody can take.
    @Test func aSnapshotNamingABasisIsNotTheHeadOfAChain() throws {
        let folder = InMemoryFolder()
        let sync = SharedFolderSync(files: folder)
        let alice = store("alice"), bob = store("bob")
        try alice.setValue("one", forKey: "a")
        try sync.synchronize(alice)
        var planted = SyncGossip(account: .default, sender: "alice", delta: alice.replicatedState.asDelta, wantsReply: false)
        planted.basis = VersionVector(["carol": 5])
        try folder.write(try SyncMessage.gossip(planted).encoded(), to: ["default", "alice", "00000000000000000002.snapshot"])
        try alice.setValue("two", forKey: "b")
        let report = try sync.synchronize(alice)
        #expect(report.written == "memory:/default/alice/00000000000000000003.snapshot")
        try sync.synchronize(bob)
        #expect(bob.value(forKey: "a") == "one" && bob.value(forKey: "b") == "two")
    }

    @Test func filesOfAnotherAccountOrReplicaAreRefusedAndReported() throws {
        let folder = InMemoryFolder()
        let sync = SharedFolderSync(files: folder)
        let mallory = store("mallory", account: "other")
        try mallory.setValue("intruder", forKey: "k")
        try sync.synchronize(mallory)
        // Mallory's file, copied into the default account's folder, under its own name and under alice's.
        let bytes = try folder.contents(of: ["other", "mallory", "00000000000000000001.snapshot"])!
        try folder.write(bytes, to: ["default", "mallory", "00000000000000000001.snapshot"])
        try folder.write(bytes, to: ["default", "alice", "00000000000000000001.snapshot"])
        let bob = store("bob")
        let report = try sync.synchronize(bob)
        #expect(bob.values.isEmpty)
        #expect(report.skipped.count == 2)
        #expect(report.skipped.contains { $0.contains("alice") && $0.contains("a file of account other") })
        #expect(report.skipped.contains { $0.contains("mallory") && $0.contains("a file of account other") })
    }

    @Test func namesThatWouldLeaveOrHideInTheFolderAreRefusedWhereGiven() throws {
        // Refused as IDs, so no store, message or file can carry them.
        for account in ["..", "a/../../b", ".hidden", "tab\there", "nul\u{0}"] { #expect(AccountID(account) == nil, "\(account)") }
        for replica in [".alice", ".", "..", "a/b"] { #expect(ReplicaID(replica) == nil, "\(replica)") }
        let (account, replica) = ("family: Smith & co", "laptop.home")
        #expect(AccountID(account) != nil && ReplicaID(replica) != nil)
        let escaping = FileSystemFolder(path: "/tmp/converge-never-created")
        #expect(throws: ConvergeError.self) { try escaping.write([1], to: ["..", "escaped"]) }
    }

    @Test(arguments: FolderKind.allCases)
    func aReplicaCompactsItsFilesIntoASnapshot(kind: FolderKind) throws {
        let files = kind.make()
        let sync = SharedFolderSync(files: files, compactionThreshold: 4)
        let alice = store("alice"), bob = store("bob")
        for i in 0..<11 {
            try alice.setValue(.integer(Int64(i)), forKey: "k\(i % 3)")
            try sync.synchronize(alice)
        }
        // 1 snapshot + 4 deltas, 6th file is a snapshot that drops them, then 4 deltas, then a snapshot.
        #expect(try files.names(in: ["default", "alice"]).sorted() == ["00000000000000000011.snapshot"])
        try sync.synchronize(bob)
        #expect(bob.replicatedState == alice.replicatedState)
    }
}
