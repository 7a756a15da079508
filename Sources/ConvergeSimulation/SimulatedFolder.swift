import Converge
import ConvergeSharedFolder
import Synchronization

/// A shared folder as a file-sync service carries it between devices: the simulated
/// implementation of ``SharedFolderFiles``, in which a file a device writes reaches each
/// other device only when it is delivered there.
///
/// The simulator (or a test) decides every delivery: late, in any order, or never, since
/// a file removed before it reached a device never does. Each device sees its own files at
/// once, and a file appears whole. Removing a file removes it everywhere at once. Every
/// listing is sorted, so nothing depends on hashing order.
package final class SimulatedFolder: Sendable {
    struct File {
        var bytes: [UInt8]
        var writer: Int
        /// The devices the file has been delivered to.
        var deliveredTo: Set<Int> = []
        /// The devices whose copy was damaged on the way, with what they see.
        var damagedCopies: [Int: [UInt8]] = [:]
    }

    struct State {
        var files: [[String]: File] = [:]
        /// Files written since ``takeWrittenFiles()`` last ran, in write order.
        var written: [[String]] = []
    }

    private let state = Mutex(State())

    package init() {}

    /// What `device` sees of the folder, and writes into it.
    package func view(for device: Int) -> SimulatedFolderView {
        SimulatedFolderView(folder: self, device: device)
    }

    /// The files written since the last call, in write order, with their writer and size;
    /// each is to be delivered to the other devices (or not).
    package func takeWrittenFiles() -> [(path: [String], writer: Int, sizeBytes: Int)] {
        state.withLock { state in
            defer { state.written.removeAll() }
            return state.written.compactMap { path in state.files[path].map { (path, $0.writer, $0.bytes.count) } }
        }
    }

    /// Makes `path` visible to `device`; nothing happens if the file no longer exists.
    ///
    /// - Returns: Whether the file still existed (else it never reaches `device`).
    @discardableResult
    package func deliver(_ path: [String], to device: Int) -> Bool {
        state.withLock { state in
            state.files[path]?.damagedCopies[device] = nil
            return state.files[path]?.deliveredTo.insert(device) != nil
        }
    }

    /// Makes `path` visible to `device` as `bytes`, a copy damaged on the way, until a
    /// sound copy arrives; nothing happens if the file no longer exists.
    package func deliverDamaged(_ path: [String], to device: Int, bytes: [UInt8]) {
        state.withLock { state in
            guard state.files[path] != nil else { return }
            state.files[path]!.deliveredTo.insert(device)
            state.files[path]!.damagedCopies[device] = bytes
        }
    }

    /// Delivers every file that still exists to each of `devices` (the service has caught up).
    package func deliverEverything(to devices: Range<Int>) {
        state.withLock { state in
            for path in state.files.keys {
                state.files[path]!.deliveredTo.formUnion(devices)
                state.files[path]!.damagedCopies = [:]
            }
        }
    }

    /// Whether the file at `path` still exists (compaction removes a replica's older files).
    package func contains(_ path: [String]) -> Bool {
        state.withLock { $0.files[path] != nil }
    }

    /// The bytes of the file at `path`, whoever has it, or `nil` if there is none.
    package func bytes(at path: [String]) -> [UInt8]? {
        state.withLock { $0.files[path]?.bytes }
    }

    /// How many files the folder holds.
    package var fileCount: Int { state.withLock { $0.files.count } }

    func names(in path: [String], seenBy device: Int) -> [String] {
        state.withLock { state in
            var names = Set<String>()
            for (filePath, file) in state.files where filePath.count > path.count && filePath.starts(with: path)
                && (file.writer == device || file.deliveredTo.contains(device)) {
                names.insert(filePath[path.count])
            }
            return names.filter { !$0.hasPrefix(".") }.sortedByUTF8()
        }
    }

    func contents(of path: [String], seenBy device: Int) -> [UInt8]? {
        state.withLock { state in
            guard let file = state.files[path], file.writer == device || file.deliveredTo.contains(device) else { return nil }
            return file.damagedCopies[device] ?? file.bytes
        }
    }

    /// The files whose copy `device` sees is damaged, in path order.
    func damagedPaths(seenBy device: Int) -> [[String]] {
        state.withLock { state in
            state.files.filter { $0.value.damagedCopies[device] != nil }.keys.sorted { $0.lexicographicallyPrecedes($1) }
        }
    }

    func write(_ bytes: [UInt8], to path: [String], by device: Int) {
        state.withLock { state in
            state.files[path] = File(bytes: bytes, writer: device)
            state.written.append(path)
        }
    }

    func remove(_ path: [String]) {
        _ = state.withLock { $0.files.removeValue(forKey: path) }
    }
}

/// One device's view of a ``SimulatedFolder``.
package struct SimulatedFolderView: SharedFolderFiles {
    let folder: SimulatedFolder
    /// The device whose view this is.
    package let device: Int

    package func names(in path: [String]) throws(ConvergeError) -> [String] {
        folder.names(in: path, seenBy: device)
    }

    package func contents(of path: [String]) throws(ConvergeError) -> [UInt8]? {
        folder.contents(of: path, seenBy: device)
    }

    package func write(_ bytes: [UInt8], to path: [String]) throws(ConvergeError) {
        folder.write(bytes, to: path, by: device)
    }

    package func remove(_ path: [String]) throws(ConvergeError) {
        folder.remove(path)
    }

    package func describe(_ path: [String]) -> String {
        "simulated-folder:/" + path.joined(separator: "/")
    }
}
