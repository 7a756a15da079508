import Converge
import ConvergeSharedFolder
import Foundation
import Testing

/// A shared folder holds files from other machines: huge, oddly named or abandoned ones
/// are skipped or cleaned, and never stop sync. Reproductions of the issue "Hostile and
/// damaged input changes nothing and crashes nothing".
@Suite struct HostileFolderTests {
    let clock = ManualClock()

    func folder(_ name: String = #function) -> (path: URL, sync: SharedFolderSync) {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("converge-hostile-\(getpid())-\(name.filter { $0.isLetter })-\(UInt32.random(in: 0...UInt32.max))")
        return (url, SharedFolderSync(folder: url.path))
    }

    @Test func aSparseThreeGigabyteFileIsSkippedWithoutReadingIt() throws {
        let (url, sync) = folder()
        let peer = url.appendingPathComponent("default/mallory")
        try FileManager.default.createDirectory(at: peer, withIntermediateDirectories: true)
        let huge = peer.appendingPathComponent("00000000000000000001.snapshot")
        #expect(FileManager.default.createFile(atPath: huge.path, contents: nil))
        let handle = try FileHandle(forWritingTo: huge)
        try handle.truncate(atOffset: 3 << 30)
        try handle.close()
        let alice = ReplicatedKeyValueStore(replicaID: "alice", clock: clock)
        try alice.setValue("mine", forKey: "k")
        let started = Date()
        let report = try sync.synchronize(alice)
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(report.written != nil)
        #expect(report.skipped.count == 1 && report.skipped[0].contains("exceeds the limit"), "\(report.skipped)")
    }

    /// A file in bob's folder that names another replica's writer ID (`alice~5`) is refused
    /// and reported, not taken for that writer's own: a broadcast under a reader's current
    /// writer ID is the reader's own and is ignored, so such a file would otherwise silently
    /// stop that reader from reading bob.
    @Test func aFileNamingAnotherReplicasWriterIDIsRefusedAndReported() throws {
        let (url, sync) = folder()
        let bob = ReplicatedKeyValueStore(replicaID: "bob", clock: clock)
        try bob.setValue("b", forKey: "b")
        try sync.synchronize(bob)
        var forged = SyncGossip(account: .default, sender: "bob", delta: bob.replicatedState.asDelta, wantsReply: false)
        forged.writer = "alice~5"
        try Data(SyncMessage.gossip(forged).encoded())
            .write(to: url.appendingPathComponent("default/bob/00000000000000000002.delta"))
        let reader = ReplicatedKeyValueStore(replicaID: "carol", clock: clock)
        let report = try sync.synchronize(reader)
        #expect(report.skipped.contains { $0.contains("a file of alice~5 in bob's folder") }, "\(report.skipped)")
        #expect(reader.value(forKey: "b") == "b", "bob's own snapshot is still taken")
    }

    /// Thousands of snapshot parts whose other parts never arrive (a writer killed while
    /// compacting, again and again, or planted) after a replica's complete snapshot: the
    /// complete one is still taken, found in one pass over the listing (the search used to
    /// filter the whole listing once per snapshot file: quadratic).
    @Test func manyIncompleteSnapshotsAfterACompleteOneLeaveItReadable() throws {
        let (url, sync) = folder()
        let bob = ReplicatedKeyValueStore(replicaID: "bob", clock: clock)
        try bob.setValue("b", forKey: "b")
        try sync.synchronize(bob)
        let peer = url.appendingPathComponent("default/bob")
        for sequence in 100..<5_100 {
            let digits = String(sequence)
            let name = String(repeating: "0", count: 20 - digits.count) + digits + ".snapshot-\(sequence % 2 + 1)-of-3"
            #expect(FileManager.default.createFile(atPath: peer.appendingPathComponent(name).path, contents: Data([1])))
        }
        let reader = ReplicatedKeyValueStore(replicaID: "carol", clock: clock)
        try sync.synchronize(reader)
        #expect(reader.value(forKey: "b") == "b")
    }

    @Test func theLargestSequenceNumberInAFileNameCrashesNothing() throws {
        let (url, sync) = folder()
        let alice = ReplicatedKeyValueStore(replicaID: "alice", clock: clock)
        let bob = ReplicatedKeyValueStore(replicaID: "bob", clock: clock)
        try alice.setValue("a", forKey: "a")
        try bob.setValue("b", forKey: "b")
        try sync.synchronize(alice)
        try sync.synchronize(bob)
        // In a peer's folder and in the replica's own folder.
        for replica in ["alice", "bob"] {
            let name = url.appendingPathComponent("default/\(replica)/18446744073709551615.delta")
            try Data([1, 2, 3]).write(to: name)
        }
        try alice.setValue("again", forKey: "a2")
        try sync.synchronize(alice)
        try sync.synchronize(bob)
        #expect(bob.value(forKey: "a2") == "again" && alice.value(forKey: "b") == "b")
    }

    @Test func temporaryFilesOfKilledWritersAreRemovedAndALiveWritersAreKept() throws {
        let (url, sync) = folder()
        let own = url.appendingPathComponent("default/alice")
        try FileManager.default.createDirectory(at: own, withIntermediateDirectories: true)
        // A process that has exited: its pid names no running process.
        let exited = Process()
        exited.executableURL = URL(fileURLWithPath: "/bin/true")
        try exited.run()
        exited.waitUntilExit()
        let abandoned = own.appendingPathComponent(".tmp-00000000000000000001.snapshot-\(exited.processIdentifier)")
        let live = own.appendingPathComponent(".tmp-00000000000000000009.snapshot-\(getpid())")
        try Data([0]).write(to: abandoned)
        try Data([0]).write(to: live)
        let alice = ReplicatedKeyValueStore(replicaID: "alice", clock: clock)
        try alice.setValue("v", forKey: "k")
        try sync.synchronize(alice)
        #expect(!FileManager.default.fileExists(atPath: abandoned.path))
        #expect(FileManager.default.fileExists(atPath: live.path))
    }

    /// The two honest offline writers with 9 MB each: the third replica's snapshot
    /// of both exceeds what one file may hold, so it is written in parts, and the third
    /// replica still reads the others (it used to write first and stop there, for good).
    @Test func aSnapshotLargerThanAFileIsWrittenInPartsAndReadWhole() throws {
        let sync = SharedFolderSync(files: InMemoryFolder())
        let big = String(repeating: "a", count: 9_000_000)
        let (alice, bob, carol) = (ReplicatedKeyValueStore(replicaID: "alice", quota: .unlimited, clock: clock),
                                   ReplicatedKeyValueStore(replicaID: "bob", quota: .unlimited, clock: clock),
                                   ReplicatedKeyValueStore(replicaID: "carol", quota: .unlimited, clock: clock))
        try alice.setValue(.string(big), forKey: "alice-big")
        try bob.setValue(.string(big), forKey: "bob-big")
        try sync.synchronize(alice)
        try sync.synchronize(bob)
        try sync.synchronize(carol)
        try carol.setValue("small", forKey: "carol")
        try alice.setValue("later", forKey: "alice-later")
        try sync.synchronize(alice)
        let report = try sync.synchronize(carol)
        #expect(report.notWritten == nil)
        #expect(report.written?.hasSuffix(".snapshot-2-of-2") == true, "\(String(describing: report.written))")
        #expect(carol.value(forKey: "alice-later") == "later")
        let dave = ReplicatedKeyValueStore(replicaID: "dave", quota: .unlimited, clock: clock)
        try sync.synchronize(dave)
        #expect(dave.replicatedState == carol.replicatedState)
    }

    /// A key whose entry alone exceeds what a file may hold cannot be written; that is
    /// reported, and the others are read all the same.
    @Test func aKeyTooLargeForAnyFileIsReportedAndTheOthersStillRead() throws {
        var sync = SharedFolderSync(files: InMemoryFolder())
        sync.maximumFileBytes = 1_024
        let alice = ReplicatedKeyValueStore(replicaID: "alice", clock: clock)
        let bob = ReplicatedKeyValueStore(replicaID: "bob", clock: clock)
        try alice.setValue("hello", forKey: "greeting")
        try sync.synchronize(alice)
        try bob.setValue(.string(String(repeating: "b", count: 2_000)), forKey: "big")
        let report = try sync.synchronize(bob)
        #expect(report.notWritten?.contains("the entry of \"big\" alone takes") == true, "\(String(describing: report.notWritten))")
        #expect(bob.value(forKey: "greeting") == "hello")
    }
}
