import Converge
import Foundation

/// Syncs stores through a shared folder: a mesh whose messages are files, which any
/// file-sync service or network share can carry between processes and machines.
///
/// Layout: `FOLDER/<account>/<writer>/<sequence>.snapshot` and `<sequence>.delta`, with
/// 20-digit sequence numbers, where `<writer>` is the store's writer ID: its replica ID,
/// or `<replica>~<n>` once it started a new incarnation. A store that starts one writes
/// its snapshot to the new folder and removes its files from the one it left, so a twin
/// under the same replica ID that stays there and it read each other's. Each writer
/// writes only its own folder, and reads every other; every file
/// appears whole (see ``SharedFolderFiles``). A file is a `SyncMessage.gossip`
/// message that the store's `MeshSyncMachine` makes and takes, as in the mesh topology:
/// a snapshot carries the replica's whole state, a delta what is new since the replica's
/// previous file (`MeshSyncMachine.broadcast(from:after:)`, for the context the folder
/// reports holding). A reader takes a replica's latest snapshot and then its following
/// deltas in order, through its store's state machine, stopping at the first gap or
/// invalid file, so it never applies a delta out of causal order: a file that is late or
/// missing only delays the files after it, until it arrives or the writer's next snapshot
/// does. Invalid files are reported and skipped, never fatal. Accounts live in separate
/// folders and a file of one account (or one writer ID) is refused in another's. After
/// ``compactionThreshold`` deltas a writer writes a fresh snapshot and deletes its older
/// files, so the folder stays bounded by about one snapshot and a few deltas per writer ID.
/// Tombstones are kept: a folder has no membership to know when they are stable.
///
/// A snapshot larger than ``maximumFileBytes`` is written in several files,
/// `<sequence>.snapshot-<i>-of-<n>`, each holding whole keys (in UTF-8 order) and the whole
/// context; a reader takes such a snapshot only once it holds all of its parts, joined into
/// one state, so size never stops sync. A delta too large for one file is written as a
/// snapshot instead.
public struct SharedFolderSync: Sendable {
    /// The shared folder's files.
    public let files: any SharedFolderFiles
    /// Deltas a replica keeps before it compacts them into a snapshot.
    public var compactionThreshold: Int
    /// The largest file this replica writes (at most `SyncMessage.maximumEncodedBytes`, the
    /// largest any reader takes); a larger snapshot is split into parts.
    public var maximumFileBytes = SyncMessage.maximumEncodedBytes {
        didSet { maximumFileBytes = min(max(maximumFileBytes, 256), SyncMessage.maximumEncodedBytes) }
    }

    // Deliberately broken behaviours, switched on only by the tests that show the property
    // tests catch them. Behind `@_spi(Testing)`: an app never sees them.
    /// Writes each delta for the replica's own context, as if every reader held it,
    /// instead of for the context of its latest file.
    @_spi(Testing) public var _guessesPublishedContext = false
    /// Reads a replica's files past a gap (a file not arrived yet) instead of stopping.
    @_spi(Testing) public var _readsPastGaps = false
    /// Takes a snapshot written in parts as soon as any of its parts has arrived.
    @_spi(Testing) public var _takesIncompleteSnapshots = false

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

    /// Writes this store's changes to the folder, then takes every other writer ID's files
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
        // Every other writer ID's folder: a twin's (a copy of the store under the same replica
        // ID) too, in the folder this store left (whose own files it removed when it left)
        // or in a folder the twin moved to.
        let writer = store.writerID
        for name in try files.names(in: [account.rawValue]).sortedByUTF8() where name != writer.rawValue {
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
        var own = [account.rawValue, store.writerID.rawValue]
        var sequence = try sequencedFiles(in: own)
        // The files that tell what this replica wrote: each delta and the last part of each
        // snapshot (`nil` for one that is unreadable, another's, or gone).
        let read = sequence.filter { $0.part == $0.parts }.map { file in
            (file: file, summary: (try? gossip(at: own + [file.name], account: account, replica: store.writerID)).map(FileSummary.init))
        }
        // What the folder holds of this replica: the context of its latest file. A snapshot
        // not all of whose parts were written (the writer was killed meanwhile) is not
        // readable, nor is anything after it; nor is a delta after a broken link of the chain
        // (see `chainIsWhole`): write a fresh snapshot.
        let whole = Self.chainIsWhole(sequence, read: read)
        let published = whole ? read.last?.summary?.context : nil
        // The replica's own files knowing more of its writes than the store does, or naming
        // another write session for a counter both reach, prove its counters reused (the
        // store was restored, copied or recreated, or a twin under the same replica ID writes
        // here too, under names this replica wrote): it starts a new incarnation, and
        // publishes a snapshot under it.
        var history = read.compactMap(\.summary).map { (writer: $0.writer, known: $0.context, sessions: $0.sessions, relayed: $0.relayed) }
        history += try otherIncarnations(of: store.writerID, account: account)
            .map { (writer: $0.writer, known: $0.context, sessions: $0.sessions, relayed: $0.relayed) }
        let restarted = history.isEmpty ? false : try store.checkOwnHistory(history)
        // The files of the writer ID this store just left: they hold writes it re-stamped,
        // which readers must not take again (their dots may name a twin's writes too).
        var left: (folder: [String], files: [SequencedFile])?
        if restarted {
            // Each writer ID writes its own folder: a twin that stays under the old one keeps
            // writing it (its next file is a snapshot, its chain being gone), and each reads
            // the other's.
            left = (own, sequence)
            own = [account.rawValue, store.writerID.rawValue]
            sequence = try sequencedFiles(in: own)
        }
        let deltasSinceSnapshot = sequence.reversed().prefix { !$0.isSnapshot }.count
        var snapshot = published == nil || restarted || deltasSinceSnapshot >= compactionThreshold
        guard var gossip = store.broadcast(after: snapshot ? nil : published) else { return nil }
        if _guessesPublishedContext && !snapshot {
            gossip.delta = ReplicatedMap.Delta(entries: [:], context: gossip.delta.context)
        }
        let next = (sequence.last?.sequence ?? 0) + 1
        var contents: [[UInt8]]
        if !snapshot, let bytes = try? SyncMessage.gossip(gossip).encoded(), bytes.count <= maximumFileBytes {
            contents = [bytes]
        } else {
            // A delta too large for one file becomes a snapshot, which may be split.
            if !snapshot, let whole = store.broadcast(after: nil) { gossip = whole }
            snapshot = true
            contents = try snapshotParts(of: gossip)
        }
        let names = contents.indices.map { SequencedFile.name(sequence: next, isSnapshot: snapshot, part: $0 + 1, of: contents.count) }
        for (name, bytes) in zip(names, contents) { try files.write(bytes, to: own + [name]) }
        if snapshot {
            // Readers start from the latest complete snapshot: the older files are no longer read.
            for old in sequence { try? files.remove(own + [old.name]) }
        }
        // Once the new incarnation's snapshot is written (it holds every write the store kept;
        // the files of a twin still writing there go too, and it writes a snapshot at its next
        // sync). A removal that fails leaves files whose re-stamped writes readers may take
        // again: the same value twice, nothing lost.
        if let left { for old in left.files { try? files.remove(left.folder + [old.name]) } }
        return files.describe(own + [names.last!])
    }

    /// The files of the store's replica ID's other writer IDs (each delta and the last part
    /// of each snapshot): its earlier incarnations', and a twin's (a copy of the store under
    /// the same replica ID) that moved on. A file that knows more of the store's writer ID
    /// than the store shows its counters reused, and one of a later writer ID shows a store
    /// under the first that a twin, or a store it was copied from, moved on (the store's
    /// `checkOwnHistory`).
    private func otherIncarnations(of writer: ReplicaID, account: AccountID) throws(ConvergeError) -> [FileSummary] {
        var found: [FileSummary] = []
        for name in try files.names(in: [account.rawValue]).sortedByUTF8() {
            guard let other = ReplicaID(name), other.base == writer.base, other != writer else { continue }
            let folder = [account.rawValue, name]
            for file in (try? sequencedFiles(in: folder)) ?? [] where file.part == file.parts {
                if let gossip = try? gossip(at: folder + [file.name], account: account, replica: other) { found.append(FileSummary(gossip)) }
            }
        }
        return found
    }

    /// Whether a reader can take this replica's files from its latest complete snapshot to
    /// its last file: the files follow it without a gap, and each delta was computed for
    /// (names as its ``SyncGossip/basis``) the context of the file before it.
    ///
    /// A link breaks when a twin of this replica (a store copied to a second device, under
    /// the same replica ID) wrote a file under a name this replica wrote too, and the file-sync
    /// service kept the twin's; or when a file went missing. A reader refuses the delta after
    /// the broken link, so the replica's next file must be a snapshot.
    ///
    /// - Parameters:
    ///   - sequence: The replica's files, in sequence order.
    ///   - read: Its deltas and the last part of each snapshot, with what they hold.
    static func chainIsWhole(_ sequence: [SequencedFile], read: [(file: SequencedFile, summary: FileSummary?)]) -> Bool {
        guard let snapshot = latestCompleteSnapshot(in: sequence), let last = snapshot.last,
              let start = read.firstIndex(where: { $0.file.name == last.name }), let head = read[start].summary,
              head.basis == nil else { return false }
        var context = head.context
        var expected = last.sequence + 1
        for (file, summary) in read[(start + 1)...] {
            guard !file.isSnapshot, file.sequence == expected, let delta = summary, delta.basis == context else { return false }
            context = delta.context
            expected += 1
        }
        // A part of a later snapshot (not its last) breaks the chain too.
        return sequence.last?.sequence ?? 0 < expected
    }

    /// What a writer needs of one of its own files: not the entries, which may be large.
    struct FileSummary {
        /// What the file's writer held when it wrote it.
        var context: VersionVector
        /// The context the delta was computed for (`nil` for a snapshot).
        var basis: VersionVector?
        /// The writer ID the file was written under.
        var writer: ReplicaID
        /// The write sessions the file names, of ``writer``.
        var sessions: WriterSessions
        /// The records of other writer IDs the file relays: what its writer kept of its
        /// previous writer ID when it started a new incarnation.
        var relayed: [SessionRecord]

        init(_ gossip: SyncGossip) {
            context = gossip.delta.context
            basis = gossip.basis
            writer = gossip.writer ?? gossip.sender
            sessions = gossip.writerSessions
            relayed = gossip.relayedSessions
        }
    }

    /// The encoded files of a snapshot: one if it fits in ``maximumFileBytes``, else parts
    /// that each hold whole keys, in UTF-8 order, and the whole context.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` (`limitExceeded`) if one key's entry alone
    ///   does not fit in a file.
    private func snapshotParts(of gossip: SyncGossip) throws(ConvergeError) -> [[UInt8]] {
        if let bytes = try? SyncMessage.gossip(gossip).encoded(), bytes.count <= maximumFileBytes { return [bytes] }
        let context = gossip.delta.context
        func message(_ entries: [String: [Sibling]]) -> SyncMessage {
            var part = SyncGossip(account: gossip.account, sender: gossip.sender,
                                  delta: ReplicatedMap.Delta(entries: entries, context: context), wantsReply: false)
            part.writerSessions = gossip.writerSessions
            part.writer = gossip.writer
            part.relayedSessions = gossip.relayedSessions
            return .gossip(part)
        }
        let empty = try message([:]).encoded().count
        // A key costs about what its entry adds to an empty message (varint widths aside:
        // a margin covers them).
        let budget = maximumFileBytes - empty - 16
        let emptyDelta = ReplicatedMap.Delta(entries: [:], context: context).encoded().count
        var parts: [[String: [Sibling]]] = []
        var current: [String: [Sibling]] = [:]
        var used = 0
        for key in gossip.delta.entries.keys.sortedByUTF8() {
            let siblings = gossip.delta.entries[key]!
            let cost = ReplicatedMap.Delta(entries: [key: siblings], context: context).encoded().count - emptyDelta
            guard cost <= budget else {
                throw .malformed(.limitExceeded, "the entry of \"\(key)\" alone takes \(cost) bytes, more than a file of \(maximumFileBytes) bytes holds")
            }
            if used + cost > budget && !current.isEmpty {
                parts.append(current)
                current = [:]
                used = 0
            }
            current[key] = siblings
            used += cost
        }
        parts.append(current)
        var files: [[UInt8]] = []
        for part in parts {
            let bytes = try message(part).encoded()
            guard bytes.count <= maximumFileBytes else {
                throw .malformed(.limitExceeded, "a snapshot part of \(bytes.count) bytes exceeds \(maximumFileBytes) bytes")
            }
            files.append(bytes)
        }
        return files
    }

    // MARK: Reading

    /// The largest sequence number a file name may carry.
    static let maximumSequence: UInt64 = 1 << 62

    /// The most parts a snapshot is written in.
    static let maximumParts = 65_536

    /// A file of a replica's sequence: a delta, a whole snapshot, or part `part` of a
    /// snapshot written in `parts` files.
    struct SequencedFile {
        var name: String
        var sequence: UInt64
        var isSnapshot: Bool
        var part = 1
        var parts = 1

        static func name(sequence: UInt64, isSnapshot: Bool, part: Int = 1, of parts: Int = 1) -> String {
            let digits = String(sequence)
            let kind = !isSnapshot ? "delta" : parts == 1 ? "snapshot" : "snapshot-\(part)-of-\(parts)"
            return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + "." + kind
        }

        /// The file named `name`, or `nil` if the name is not one this transport writes.
        init?(name: String) {
            let pieces = name.split(separator: ".", omittingEmptySubsequences: false)
            // Sequence numbers past 2^62 are never written: such a name is not one of ours,
            // and taking it would leave no next number.
            guard pieces.count == 2, pieces[0].count == 20, pieces[0].allSatisfy(\.isASCII),
                  let sequence = UInt64(pieces[0]), sequence <= SharedFolderSync.maximumSequence else { return nil }
            self.name = name
            self.sequence = sequence
            switch pieces[1] {
            case "delta": isSnapshot = false
            case "snapshot": isSnapshot = true
            default:
                let words = pieces[1].split(separator: "-", omittingEmptySubsequences: false)
                guard words.count == 4, words[0] == "snapshot", words[2] == "of",
                      let part = Int(words[1]), let parts = Int(words[3]), parts >= 2, parts <= SharedFolderSync.maximumParts,
                      (1...parts).contains(part), name == Self.name(sequence: sequence, isSnapshot: true, part: part, of: parts)
                else { return nil }
                isSnapshot = true
                self.part = part
                self.parts = parts
            }
        }
    }

    /// A replica's files in sequence order (temporary and unknown files left out).
    private func sequencedFiles(in folder: [String]) throws(ConvergeError) -> [SequencedFile] {
        try files.names(in: folder).compactMap(SequencedFile.init(name:))
            .sorted { ($0.sequence, $0.part) < ($1.sequence, $1.part) }
    }

    /// Gives `store` one replica's latest complete snapshot (every part of it arrived) and
    /// the consecutive deltas after it, up to the first gap or invalid file; returns the
    /// files it took, the keys that changed and the files skipped.
    ///
    /// - Throws: The store's storage error.
    private func take(filesOf replica: ReplicaID, account: AccountID, into store: ReplicatedKeyValueStore)
        throws(ConvergeError) -> (files: [String], changedKeys: [String], skipped: [String]) {
        let folder = [account.rawValue, replica.rawValue]
        guard let sequence = try? sequencedFiles(in: folder),
              let snapshot = Self.latestCompleteSnapshot(in: sequence, orAnyPart: _takesIncompleteSnapshots) else { return ([], [], []) }
        var taken: [String] = []
        var changed: [String] = []
        // The snapshot, joined from its parts.
        var parts: [SyncGossip] = []
        for file in snapshot {
            let path = folder + [file.name]
            do {
                guard let gossip = try gossip(at: path, account: account, replica: replica) else { return ([], [], []) }
                parts.append(gossip)
            } catch {
                return ([], [], ["\(files.describe(path)): \(error)"])
            }
        }
        let joined: SyncGossip
        do { joined = try Self.join(parts) } catch {
            return ([], [], ["\(files.describe(folder + [snapshot[0].name])): \(error)"])
        }
        let receipt = try store.receive(.gossip(joined))
        // The file proved this replica's counters reused and was not applied: read this
        // replica again from its snapshot next time, under the new incarnation.
        if receipt.startedIncarnation || receipt.ignored != nil { return ([], [], []) }
        changed += receipt.changedKeys
        taken += snapshot.map { files.describe(folder + [$0.name]) }
        var expected = snapshot[0].sequence + 1
        for file in sequence where file.sequence > snapshot[0].sequence {
            // A gap: a file that has not arrived yet, or compaction in progress (a later
            // snapshot, some of whose parts have not arrived, is one too). Read on next time.
            guard !file.isSnapshot, file.sequence == expected || _readsPastGaps else { break }
            let path = folder + [file.name]
            var message: SyncGossip
            do {
                // A file removed by compaction since it was listed is a gap too.
                guard let gossip = try gossip(at: path, account: account, replica: replica) else {
                    if _readsPastGaps { continue }
                    break
                }
                message = gossip
            } catch {
                return (taken, changed, ["\(files.describe(path)): \(error)"])
            }
            // Broken, for tests: applied whatever the reader holds.
            if _readsPastGaps { message.basis = nil }
            let receipt = try store.receive(.gossip(message))
            // A delta computed for more than this store holds (it took another file under the
            // name before, written by a twin of the replica) is a gap too: the replica's next
            // snapshot follows.
            if receipt.startedIncarnation || receipt.ignored != nil { break }
            changed += receipt.changedKeys
            taken.append(files.describe(path))
            expected = file.sequence + 1
        }
        return (taken, changed, [])
    }

    /// The files of the latest snapshot whose every part is listed, in part order (or,
    /// broken, of the latest snapshot any part of which is listed).
    ///
    /// - Complexity: O(*n*) in the files listed: a folder holding many incomplete snapshots
    ///   (one being written, or planted) costs one pass, not one per snapshot.
    static func latestCompleteSnapshot(in sequence: [SequencedFile], orAnyPart: Bool = false) -> [SequencedFile]? {
        struct Snapshot: Hashable {
            var sequence: UInt64
            var parts: Int
        }
        var snapshots: [Snapshot: [SequencedFile]] = [:]
        for file in sequence where file.isSnapshot {
            snapshots[Snapshot(sequence: file.sequence, parts: file.parts), default: []].append(file)
        }
        for file in sequence.reversed() where file.isSnapshot {
            // Each snapshot once, from its last part listed.
            guard let parts = snapshots.removeValue(forKey: Snapshot(sequence: file.sequence, parts: file.parts)) else { continue }
            // Names are unique and each part is within 1...parts, so as many files as parts
            // are every part, in order (the listing is in sequence and part order).
            if parts.count == file.parts || orAnyPart { return parts }
        }
        return nil
    }

    /// The gossip message in the file at `path`, or `nil` if the file is gone (removed by
    /// compaction since it was listed).
    ///
    /// - Throws: `ConvergeError` if the file cannot be read, is not a gossip message, or
    ///   belongs to another account or replica.
    private func gossip(at path: [String], account: AccountID, replica: ReplicaID) throws(ConvergeError) -> SyncGossip? {
        guard let bytes = try files.contents(of: path) else { return nil }
        guard case .gossip(let gossip) = try SyncMessage(encoded: bytes) else { throw .malformed(.unexpectedMessage, "not a gossip message") }
        guard gossip.account == account else {
            throw .malformed(.unexpectedMessage, "a file of account \(gossip.account) in \(account)'s folder")
        }
        // A folder is a writer ID's: a replica's first writer ID's folder may also hold files
        // of its later incarnations written before each wrote its own folder (before 2026-11-27).
        let writer = gossip.writer ?? gossip.sender
        guard gossip.sender == replica.base && writer.base == replica.base && (replica == replica.base || writer == replica) else {
            throw .malformed(.unexpectedMessage, "a file of \(writer) in \(replica)'s folder")
        }
        return gossip
    }

    /// The snapshot the parts of one make: their keys (which no two share) under the context
    /// they all carry.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if the parts disagree on the context or
    ///   share a key.
    static func join(_ parts: [SyncGossip]) throws(ConvergeError) -> SyncGossip {
        guard parts.count > 1 else { return parts[0] }
        var joined = parts[0]
        for part in parts.dropFirst() {
            guard part.delta.context == joined.delta.context else {
                throw .malformed(.unexpectedMessage, "the parts of a snapshot carry different contexts")
            }
            for (key, siblings) in part.delta.entries {
                guard joined.delta.entries.updateValue(siblings, forKey: key) == nil else {
                    throw .malformed(.unexpectedMessage, "two parts of a snapshot hold \"\(key)\"")
                }
            }
        }
        return joined
    }
}
