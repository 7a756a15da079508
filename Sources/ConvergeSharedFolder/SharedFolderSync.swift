import Converge
import Foundation

/// Syncs stores through a shared folder: a mesh whose messages are files, which any
/// file-sync service or network share can carry between processes and machines.
///
/// Layout: `FOLDER/<account>/<replica>/<sequence>.snapshot` and `<sequence>.delta`, with
/// 20-digit sequence numbers. Each replica writes only its own folder, and every file
/// appears whole (see ``SharedFolderFiles``). A file is a `SyncMessage.gossip`
/// message that the store's `MeshSyncMachine` makes and takes, as in the mesh topology:
/// a snapshot carries the replica's whole state, a delta what is new since the replica's
/// previous file (`MeshSyncMachine.broadcast(from:after:)`, for the context the folder
/// reports holding). A reader takes a replica's latest snapshot and then its following
/// deltas in order, through its store's state machine, stopping at the first gap or
/// invalid file, so it never applies a delta out of causal order: a file that is late or
/// missing only delays the files after it, until it arrives or the writer's next snapshot
/// does. Invalid files are reported and skipped, never fatal. Accounts live in separate
/// folders and a file of one account (or one replica) is refused in another's. After
/// ``compactionThreshold`` deltas a replica writes a fresh snapshot and deletes its older
/// files, so the folder stays bounded by about one snapshot and a few deltas per replica.
/// Tombstones are kept: a folder has no membership to know when they are stable.
public struct SharedFolderSync: Sendable {
    /// The shared folder's files.
    public let files: any SharedFolderFiles
    /// Deltas a replica keeps before it compacts them into a snapshot.
    public var compactionThreshold: Int

    // Deliberately broken behaviours, switched on only by the tests that show the property
    // tests catch them. Behind `@_spi(Testing)`: an app never sees them.
    /// Writes each delta for the replica's own context, as if every reader held it,
    /// instead of for the context of its latest file.
    @_spi(Testing) public var _guessesPublishedContext = false
    /// Reads a replica's files past a gap (a file not arrived yet) instead of stopping.
    @_spi(Testing) public var _readsPastGaps = false

    /// Syncs through the folder at `folder` on the file system.
    public init(folder: String, compactionThreshold: Int = 16) {
        self.init(files: FileSystemFolder(path: folder), compactionThreshold: compactionThreshold)
    }

    /// Syncs through `files`: a real folder, one in memory, or a simulated one.
    public init(files: any SharedFolderFiles, compactionThreshold: Int = 16) {
        self.files = files
        self.compactionThreshold = compactionThreshold
    }

    /// What one ``synchronize(_:)`` did.
    public struct Report: Sendable {
        /// The file this replica wrote, if it had changes.
        public var written: String?
        /// Replicas whose files were read.
        public var replicasRead: [ReplicaID] = []
        /// The files of other replicas this replica took, in the order it took them (as
        /// ``SharedFolderFiles/describe(_:)`` names them): each replica's latest snapshot
        /// and the deltas after it, up to the first that has not arrived.
        public var filesTaken: [String] = []
        /// Keys whose visible values changed here, in UTF-8 byte order.
        public var changedKeys: [String] = []
        /// Files skipped, with why.
        public var skipped: [String] = []
        /// Why this replica's changes could not be written, if they could not: a state or
        /// change larger than one file may be (`SyncMessage.maximumEncodedBytes`). The other
        /// replicas' files were read all the same.
        public var notWritten: String?
    }

    /// Writes this store's changes to the folder, then takes every other replica's files
    /// (even if this replica's changes were too large to write: see ``Report/notWritten``).
    ///
    /// - Throws: `ConvergeError.storage` if the folder cannot be written or read, if
    ///   the store's account or replica ID is not a plain file name (it would leave or hide
    ///   in the folder), or if the store's storage fails; invalid files of other replicas
    ///   are skipped and reported, not thrown.
    /// - Complexity: O(*n*) in the siblings of the store's state to write, plus the size of
    ///   the files read.
    @discardableResult
    public func synchronize(_ store: ReplicatedKeyValueStore) throws(ConvergeError) -> Report {
        var report = Report()
        let account = store.account
        for name in [account.rawValue, store.replicaID.rawValue] where !Self.isPlainName(name) {
            throw .storage(.invalidName, path: files.describe([account.rawValue, store.replicaID.rawValue]), operation: .create,
                           detail: "\"\(name)\" cannot name a folder")
        }
        // Publish what other writers of the store's storage (another process on the same
        // file) wrote too, and tell the app of it.
        report.changedKeys = try store.refresh()
        // A change too large to write must not stop this replica from reading the others.
        do {
            report.written = try publish(store, account: account)
        } catch .malformed(let input) where input.problem == .limitExceeded {
            report.notWritten = input.description
        }
        var changed = Set(report.changedKeys)
        for name in try files.names(in: [account.rawValue]).sortedByUTF8() where name != store.replicaID.rawValue {
            guard let replica = ReplicaID(name) else {
                report.skipped.append("\(files.describe([account.rawValue, name])): not a replica folder")
                continue
            }
            let read = try take(filesOf: replica, account: account, into: store)
            report.skipped += read.skipped
            changed.formUnion(read.changedKeys)
            report.filesTaken += read.files
            if !read.files.isEmpty { report.replicasRead.append(replica) }
        }
        report.changedKeys = changed.sortedByUTF8()
        return report
    }

    /// Whether `name` can name a file or folder in the shared folder: not empty, not `.`
    /// or `..`, not hidden (a leading "."), no "/" or NUL.
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && !name.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == 0 })
    }

    // MARK: Writing

    /// Writes what is new since this replica's latest file (or a snapshot), compacting
    /// when due; returns the file written, if any.
    private func publish(_ store: ReplicatedKeyValueStore, account: AccountID) throws(ConvergeError) -> String? {
        let own = [account.rawValue, store.replicaID.rawValue]
        let sequence = try sequencedFiles(in: own)
        // What the folder holds of this replica: the context of its latest readable file.
        var published: VersionVector?
        if let last = sequence.last, let bytes = try? files.contents(of: own + [last.name]),
           case .gossip(let gossip)? = try? SyncMessage(encoded: bytes), gossip.account == account, gossip.sender == store.replicaID {
            published = gossip.delta.context
        }
        // The replica's own files knowing more of its writes than the store does prove its
        // counters reused (the store was restored, copied or recreated): it starts a new
        // incarnation, and publishes a snapshot under it.
        let restarted = try published.map { known throws(ConvergeError) in try store.checkOwnHistory(known) } ?? false
        let deltasSinceSnapshot = sequence.reversed().prefix { !$0.isSnapshot }.count
        let snapshot = published == nil || restarted || deltasSinceSnapshot >= compactionThreshold
        guard var gossip = store.broadcast(after: snapshot ? nil : published) else { return nil }
        if _guessesPublishedContext && !snapshot {
            gossip.delta = ReplicatedMap.Delta(entries: [:], context: gossip.delta.context)
        }
        let file = own + [SequencedFile.name(sequence: (sequence.last?.sequence ?? 0) + 1, isSnapshot: snapshot)]
        try files.write(try SyncMessage.gossip(gossip).encoded(), to: file)
        if snapshot {
            // Readers start from the latest snapshot: the older files are no longer read.
            for old in sequence { try? files.remove(own + [old.name]) }
        }
        return files.describe(file)
    }

    // MARK: Reading

    /// The largest sequence number a file name may carry.
    static let maximumSequence: UInt64 = 1 << 62

    /// A file of a replica's sequence.
    struct SequencedFile {
        var name: String
        var sequence: UInt64
        var isSnapshot: Bool

        static func name(sequence: UInt64, isSnapshot: Bool) -> String {
            let digits = String(sequence)
            return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + (isSnapshot ? ".snapshot" : ".delta")
        }
    }

    /// A replica's files in sequence order (temporary and unknown files left out).
    private func sequencedFiles(in folder: [String]) throws(ConvergeError) -> [SequencedFile] {
        try files.names(in: folder).compactMap { name -> SequencedFile? in
            let parts = name.split(separator: ".")
            // Sequence numbers past 2^62 are never written: such a name is not one of ours,
            // and taking it would leave no next number.
            guard parts.count == 2, parts[0].count == 20, let sequence = UInt64(parts[0]), sequence <= Self.maximumSequence,
                  parts[1] == "snapshot" || parts[1] == "delta" else { return nil }
            return SequencedFile(name: name, sequence: sequence, isSnapshot: parts[1] == "snapshot")
        }.sorted { $0.sequence < $1.sequence }
    }

    /// Gives `store` one replica's latest snapshot and the consecutive deltas after it, up
    /// to the first gap or invalid file; returns the files it took, the keys that changed
    /// and the files skipped.
    ///
    /// - Throws: The store's storage error.
    private func take(filesOf replica: ReplicaID, account: AccountID, into store: ReplicatedKeyValueStore)
        throws(ConvergeError) -> (files: [String], changedKeys: [String], skipped: [String]) {
        let folder = [account.rawValue, replica.rawValue]
        guard let sequence = try? sequencedFiles(in: folder), let start = sequence.lastIndex(where: \.isSnapshot) else { return ([], [], []) }
        var taken: [String] = []
        var changed: [String] = []
        var expected = sequence[start].sequence
        for file in sequence[start...] {
            // A gap: a file that has not arrived yet, or compaction in progress. Read on next time.
            guard file.sequence == expected || _readsPastGaps else { break }
            let path = folder + [file.name]
            let message: SyncMessage
            do {
                // A file removed by compaction since it was listed is a gap too.
                guard let bytes = try files.contents(of: path) else {
                    if _readsPastGaps { continue }
                    break
                }
                message = try SyncMessage(encoded: bytes)
                guard case .gossip(let gossip) = message else { throw ConvergeError.malformed(.unexpectedMessage, "not a gossip message") }
                guard gossip.account == account else {
                    throw ConvergeError.malformed(.unexpectedMessage, "a file of account \(gossip.account) in \(account)'s folder")
                }
                guard gossip.sender == replica else {
                    throw ConvergeError.malformed(.unexpectedMessage, "a file of \(gossip.sender) in \(replica)'s folder")
                }
            } catch {
                return (taken, changed, ["\(files.describe(path)): \(error)"])
            }
            let receipt = try store.receive(message)
            // The file proved this replica's counters reused and was not applied: read this
            // replica again from its snapshot next time, under the new incarnation.
            if receipt.startedIncarnation { break }
            changed += receipt.changedKeys
            taken.append(files.describe(path))
            expected = file.sequence + 1
        }
        return (taken, changed, [])
    }
}
