import Converge
@_spi(Testing) import ConvergeSharedFolder

/// The folder topology: each device syncs with the real ``SharedFolderSync`` over its view
/// of one ``SimulatedFolder``. A file a device writes is sent over the simulated network to
/// each other device, as a file-sync service would carry it; its arrival makes the file
/// visible there, so files arrive late, out of order, twice or never, and partitions, offline
/// periods and crashes cut them as they cut messages. Compaction removes files everywhere at
/// once. At the heal the service catches up: every file still in the folder is everywhere.
///
/// The reference model sees a file as a message: it carries what its writer knew when it wrote
/// it, and a device that takes it (its replica's snapshot and every delta up to it, as the
/// transport reports) learns that.
extension Simulation {
    /// A file of the folder the reference model follows.
    struct PublishedFile {
        var path: [String]
        /// How the device views name it (``SharedFolderSync/Report/filesTaken``).
        var name: String
        /// The model's number for the file.
        var message: Int
    }

    /// Device `d` syncs through the folder: writes its changes, then takes the other
    /// replicas' files that have reached it.
    func synchronizeThroughFolder(_ d: Int) {
        changed(.device(d))
        setClock(d)
        let store = devices[d].store
        let view = folder.view(for: d)
        var transport = SharedFolderSync(files: view)
        transport._guessesPublishedContext = hooks.senderGuessesPeerContext
        transport._readsPastGaps = hooks.folderReadersReadPastGaps
        transport.maximumFileBytes = options.folderFileBytes
        transport._takesIncompleteSnapshots = hooks.folderReadersTakeIncompleteSnapshots
        let before = (writer: store.writerID, state: store.replicatedState, keptAside: keptAsideStates(d))
        let outcome = Result { () throws(ConvergeError) in try transport.synchronize(store) }
        // The file written carries what the device knew before it took the others' files:
        // the transport writes first, then reads (and a failure while reading leaves it written).
        let written = folder.takeWrittenFiles()
        // A new incarnation started either before writing (the device's own files knew more
        // of its writes: the file written is the new incarnation's) or while reading (a file
        // of another replica's knew more: it was not taken, and nothing after it).
        let reincarnated = store.writerID != before.writer
        let writtenAfter = reincarnated && written.contains { isOfNewIncarnation($0.path, writerBefore: before.writer, stateBefore: before.state) }
        if writtenAfter {
            observeIncarnation(d, writerBefore: before.writer, stateBefore: before.state, keptAsideBefore: before.keptAside)
        }
        for file in written {
            publish(file.path, account: store.account, writer: d, name: view.describe(file.path))
        }
        defer {
            if reincarnated && !writtenAfter {
                observeIncarnation(d, writerBefore: before.writer, stateBefore: before.state, keptAsideBefore: before.keptAside)
            }
        }
        let report: SharedFolderSync.Report
        switch outcome {
        case .success(let made): report = made
        case .failure(let error):
            if !refusedOnFullDisk(d, error) {
                violations.append(Violation(.storage, "\(devices[d].id) could not sync through the folder: \(error)"))
            }
            return
        }
        if let notWritten = report.notWritten {
            // The transport read the others' files but could not publish this device's
            // changes (one key's siblings alone exceed a file): they reach nobody until the
            // key is written again, which the liveness checker would only see as a stall.
            self.report(Violation(.sync, "\(devices[d].id) could not write its changes to the folder: \(notWritten)"),
                        once: "folder-not-written-\(d)")
        }
        let damaged = Set(folder.damagedPaths(seenBy: d).map(view.describe))
        for name in report.filesTaken {
            if damaged.contains(name) {
                self.report(Violation(.integrity, "\(devices[d].id) took \(name), a file damaged on the way (one bit flipped)"))
            }
            // The latest file of that name: twins (devices cloned from one disk) write into one
            // replica's folder, and may write the same name.
            guard let file = publishedFiles.last(where: { $0.name == name }) else {
                violations.append(Violation(.sync, "\(devices[d].id) took \(name), which no device wrote"))
                continue
            }
            model.delivered(message: file.message, to: .device(d), currentAccount: store.account, lastCopy: false)
        }
        for skipped in report.skipped {
            // A file damaged on the way is skipped, as it must be; any other is a finding.
            if damaged.contains(where: { skipped.hasPrefix($0 + ": ") }) {
                metrics.damagedFilesSkipped += 1
                continue
            }
            violations.append(Violation(.sync, "\(devices[d].id) skipped a file the simulator did not damage: \(skipped)"))
        }
        forgetRemovedFiles()
        observeContext(d)
        scheduleFlush(d)
    }

    /// Whether the file at `path`, which a device just wrote, was written after it started a
    /// new incarnation: it knows less of the old writer ID than the store did before, or
    /// names the new one.
    private func isOfNewIncarnation(_ path: [String], writerBefore: ReplicaID, stateBefore: ReplicatedMap) -> Bool {
        guard let bytes = folder.bytes(at: path), case .gossip(let gossip)? = try? SyncMessage(encoded: bytes) else { return false }
        let context = gossip.delta.context
        return context[writerBefore] < stateBefore.context[writerBefore]
            || context.sortedEntries.contains { $0.replica != writerBefore && $0.replica.base == writerBefore.base }
    }

    /// A file device `writer` wrote: the model notes what it carries, and the network
    /// carries it to every other device.
    private func publish(_ path: [String], account: AccountID, writer: Int, name: String) {
        let message = nextFileMessage
        nextFileMessage -= 1
        model.sent(message: message, from: .device(writer), account: account)
        publishedFiles.append(PublishedFile(path: path, name: name, message: message))
        guard let bytes = folder.bytes(at: path) else { return }
        for reader in devices.indices where reader != writer {
            if let id = transmit(bytes, from: .device(writer), to: .device(reader)) { fileDeliveries[id] = path }
        }
    }

    /// Files compaction removed carry nothing any more: the model and the network forget them.
    private func forgetRemovedFiles() {
        guard publishedFiles.contains(where: { !folder.contains($0.path) }) else { return }
        for file in publishedFiles where !folder.contains(file.path) {
            model.dropped(message: file.message, lastCopy: true)
        }
        publishedFiles.removeAll { !folder.contains($0.path) }
        fileDeliveries = fileDeliveries.filter { folder.contains($0.value) }
    }
}
