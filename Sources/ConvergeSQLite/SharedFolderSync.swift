import Converge
import Foundation

/// Syncs stores through a folder that any file-sync service or network share can carry.
///
/// Layout: `FOLDER/<account>/<replica>/<sequence>.snapshot` and `<sequence>.delta`, with
/// 20-digit sequence numbers. Each replica writes only its own folder, always to a
/// temporary name first and then by atomic rename, so readers never see half a file. A
/// file is a ``SyncMessage/gossip(_:)`` message: a snapshot carries the replica's whole
/// state, a delta what changed since the replica's previous file. A reader applies a
/// replica's latest snapshot and then its following deltas in order, stopping at the first
/// gap or invalid file (so it never applies a delta out of causal order); invalid files
/// are reported and skipped, never fatal. Accounts live in separate folders and a file of
/// one account is refused in another's. After ``compactionThreshold`` deltas a replica
/// writes a fresh snapshot and deletes its older files, so the folder stays bounded by
/// about one snapshot and a few deltas per replica. Tombstones are kept: a folder has no
/// membership to know when they are stable.
public struct SharedFolderSync: Sendable {
    /// The shared folder.
    public let folder: URL
    /// Deltas a replica keeps before it compacts them into a snapshot.
    public var compactionThreshold: Int

    public init(folder: String, compactionThreshold: Int = 16) {
        self.folder = URL(fileURLWithPath: folder, isDirectory: true)
        self.compactionThreshold = compactionThreshold
    }

    /// What one ``synchronize(_:)`` did.
    public struct Report: Sendable {
        /// The file this replica wrote, if it had changes.
        public var written: String?
        /// Replicas whose files were read.
        public var replicasRead: [ReplicaID] = []
        /// Keys whose visible values changed here.
        public var changedKeys: [String] = []
        /// Files skipped, with why.
        public var skipped: [String] = []
    }

    /// Writes this store's changes to the folder, then merges every other replica's.
    ///
    /// - Throws: ``ConvergeError/storage(_:)`` if the folder cannot be written or read;
    ///   invalid files of other replicas are skipped and reported, not thrown.
    @discardableResult
    public func synchronize(_ store: ReplicatedKeyValueStore) throws(ConvergeError) -> Report {
        var report = Report()
        let accountFolder = folder.appendingPathComponent(store.account.rawValue, isDirectory: true)
        let own = accountFolder.appendingPathComponent(store.replicaID.rawValue, isDirectory: true)
        try createDirectory(own)
        report.written = try export(store, to: own)
        let replicas = try contents(of: accountFolder).filter { $0 != store.replicaID.rawValue }.sorted()
        var changed = Set<String>()
        for name in replicas {
            guard let replica = ReplicaID(name) else {
                report.skipped.append("\(accountFolder.appendingPathComponent(name).path): not a replica folder")
                continue
            }
            let (deltas, skipped) = readChain(of: replica, account: store.account, in: accountFolder.appendingPathComponent(name))
            report.skipped += skipped
            guard !deltas.isEmpty else { continue }
            report.replicasRead.append(replica)
            for delta in deltas { changed.formUnion(try store.merge(delta)) }
        }
        report.changedKeys = changed.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return report
    }

    // MARK: Writing

    /// Writes a delta since this replica's last file (or a snapshot), compacting when due.
    private func export(_ store: ReplicatedKeyValueStore, to own: URL) throws(ConvergeError) -> String? {
        let files = try sequencedFiles(in: own)
        let state = store.replicatedState
        let last = files.last
        var lastContext: VersionVector?
        if let last, let message = try? decode(own.appendingPathComponent(last.name)), case .gossip(let gossip) = message {
            lastContext = gossip.delta.context
        }
        let deltasSinceSnapshot = files.reversed().prefix { !$0.isSnapshot }.count
        let sequence = (last?.sequence ?? 0) + 1
        let snapshot = lastContext == nil || deltasSinceSnapshot >= compactionThreshold
        let delta = snapshot ? state.asDelta : state.delta(for: lastContext!)
        if !snapshot && delta.entries.isEmpty && delta.context == lastContext { return nil }
        let message = SyncMessage.gossip(SyncGossip(account: store.account, sender: store.replicaID, delta: delta, wantsReply: false))
        let name = String(format: "%020llu", sequence) + (snapshot ? ".snapshot" : ".delta")
        try writeAtomically(try message.encoded(), to: own.appendingPathComponent(name))
        if snapshot {
            for file in files { try? FileManager.default.removeItem(at: own.appendingPathComponent(file.name)) }
        }
        return own.appendingPathComponent(name).path
    }

    private func writeAtomically(_ bytes: [UInt8], to url: URL) throws(ConvergeError) {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".tmp-\(url.lastPathComponent)-\(getpid())")
        do {
            try Data(bytes).write(to: temporary)
            let handle = try FileHandle(forWritingTo: temporary)
            try handle.synchronize()
            try handle.close()
            guard rename(temporary.path, url.path) == 0 else {
                let code = errno
                throw ConvergeError.storage(StorageFailure.Kind(posixErrorCode: code), path: url.path, operation: .write,
                                            detail: "rename from \(temporary.lastPathComponent): \(String(cString: strerror(code)))")
            }
        } catch let error as ConvergeError {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw .storage(StorageFailure.Kind(error), path: url.path, operation: .write, detail: error.localizedDescription)
        }
    }

    // MARK: Reading

    struct SequencedFile {
        var name: String
        var sequence: UInt64
        var isSnapshot: Bool
    }

    /// A replica's files in sequence order (temporary and unknown files left out).
    private func sequencedFiles(in directory: URL) throws(ConvergeError) -> [SequencedFile] {
        try contents(of: directory).compactMap { name -> SequencedFile? in
            let parts = name.split(separator: ".")
            guard parts.count == 2, parts[0].count == 20, let sequence = UInt64(parts[0]),
                  parts[1] == "snapshot" || parts[1] == "delta" else { return nil }
            return SequencedFile(name: name, sequence: sequence, isSnapshot: parts[1] == "snapshot")
        }.sorted { $0.sequence < $1.sequence }
    }

    /// The deltas to apply from one replica: its latest snapshot and the consecutive deltas
    /// after it, up to the first gap or invalid file.
    private func readChain(of replica: ReplicaID, account: AccountID, in directory: URL) -> ([ReplicatedMap.Delta], [String]) {
        guard let files = try? sequencedFiles(in: directory), let start = files.lastIndex(where: \.isSnapshot) else { return ([], []) }
        var deltas: [ReplicatedMap.Delta] = []
        var skipped: [String] = []
        var expected = files[start].sequence
        for file in files[start...] {
            let path = directory.appendingPathComponent(file.name)
            guard file.sequence == expected else { break }  // a gap: compaction in progress; read the rest next time
            do {
                guard case .gossip(let gossip) = try decode(path) else { throw ConvergeError.malformed(.unexpectedMessage, "not a gossip message") }
                guard gossip.account == account else { throw ConvergeError.malformed(.unexpectedMessage, "a file of account \(gossip.account) in \(account)'s folder") }
                guard gossip.sender == replica else { throw ConvergeError.malformed(.unexpectedMessage, "a file of \(gossip.sender) in \(replica)'s folder") }
                deltas.append(gossip.delta)
            } catch {
                // A file deleted by compaction while we read is not an error; anything else is.
                if FileManager.default.fileExists(atPath: path.path) { skipped.append("\(path.path): \(error)") }
                break
            }
            expected += 1
        }
        return (deltas, skipped)
    }

    private func decode(_ url: URL) throws -> SyncMessage {
        let data = try Data(contentsOf: url)
        return try SyncMessage(encoded: [UInt8](data))
    }

    private func contents(of directory: URL) throws(ConvergeError) -> [String] {
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        do { return try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix(".") } } catch {
            throw .storage(StorageFailure.Kind(error), path: directory.path, operation: .read, detail: error.localizedDescription)
        }
    }

    private func createDirectory(_ url: URL) throws(ConvergeError) {
        do { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) } catch {
            throw .storage(StorageFailure.Kind(error), path: url.path, operation: .create, detail: error.localizedDescription)
        }
    }
}
