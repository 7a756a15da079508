import Converge
import Foundation

/// A shared folder on the file system: the real ``SharedFolderFiles``.
///
/// Files are written to a hidden temporary name in their folder, flushed to disk, then
/// renamed into place, so a reader (or a file-sync service carrying the folder to another
/// machine) never sees half a file.
public struct FileSystemFolder: SharedFolderFiles {
    /// The folder's location.
    public let url: URL

    /// A shared folder at `path` (created on the first write if missing).
    public init(path: String) {
        url = URL(fileURLWithPath: path, isDirectory: true)
    }

    public func names(in path: [String]) throws(ConvergeError) -> [String] {
        let directory = try location(of: path)
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        do { return try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix(".") } } catch {
            throw .storage(StorageFailure.Kind(error), path: directory.path, operation: .read, detail: error.localizedDescription)
        }
    }

    public func contents(of path: [String]) throws(ConvergeError) -> [UInt8]? {
        let file = try location(of: path)
        let limit = SyncMessage.maximumEncodedBytes
        do {
            // The size is checked before anything is read, and no more than the limit is read
            // even if the file grows meanwhile: a huge (or sparse) file costs nothing.
            let size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.intValue ?? 0
            guard size <= limit else { throw ConvergeError.malformed(.limitExceeded, "a file of \(size) bytes exceeds the limit of \(limit)") }
            let handle = try FileHandle(forReadingFrom: file)
            defer { try? handle.close() }
            let bytes = [UInt8](try handle.read(upToCount: limit + 1) ?? Data())
            guard bytes.count <= limit else { throw ConvergeError.malformed(.limitExceeded, "a file of more than \(limit) bytes exceeds the limit") }
            return bytes
        } catch let error as ConvergeError {
            throw error
        } catch {
            // Removed since it was listed (compaction): not an error.
            guard FileManager.default.fileExists(atPath: file.path) else { return nil }
            throw .storage(StorageFailure.Kind(error), path: file.path, operation: .read, detail: error.localizedDescription)
        }
    }

    public func write(_ bytes: [UInt8], to path: [String]) throws(ConvergeError) {
        let file = try location(of: path)
        let folder = file.deletingLastPathComponent()
        do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
            throw .storage(StorageFailure.Kind(error), path: folder.path, operation: .create, detail: error.localizedDescription)
        }
        Self.removeAbandonedTemporaries(in: folder)
        let temporary = folder.appendingPathComponent(".tmp-\(file.lastPathComponent)-\(getpid())")
        do {
            try Data(bytes).write(to: temporary)
            let handle = try FileHandle(forWritingTo: temporary)
            try handle.synchronize()
            try handle.close()
            guard rename(temporary.path, file.path) == 0 else {
                let code = errno
                throw ConvergeError.storage(StorageFailure.Kind(posixErrorCode: code), path: file.path, operation: .write,
                                            detail: "rename from \(temporary.lastPathComponent): \(String(cString: strerror(code)))")
            }
        } catch let error as ConvergeError {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw .storage(StorageFailure.Kind(error), path: file.path, operation: .write, detail: error.localizedDescription)
        }
    }

    /// Removes the temporary files that writers killed before renaming them left behind
    /// (`.tmp-NAME-PID` whose process no longer runs); a live writer's are left alone.
    static func removeAbandonedTemporaries(in folder: URL) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        for name in names where name.hasPrefix(".tmp-") {
            guard let pid = name.split(separator: "-").last.flatMap({ Int32($0) }), pid > 0,
                  kill(pid, 0) == -1 && errno == ESRCH else { continue }
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
        }
    }

    public func remove(_ path: [String]) throws(ConvergeError) {
        let file = try location(of: path)
        do { try FileManager.default.removeItem(at: file) } catch {
            guard FileManager.default.fileExists(atPath: file.path) else { return }
            throw .storage(StorageFailure.Kind(error), path: file.path, operation: .write, detail: error.localizedDescription)
        }
    }

    public func describe(_ path: [String]) -> String {
        path.reduce(url) { $0.appendingPathComponent($1) }.path
    }

    /// The URL of `path`, whose every component must be a plain name: a path never
    /// leaves the folder.
    private func location(of path: [String]) throws(ConvergeError) -> URL {
        for name in path where !SharedFolderSync.isPlainName(name) {
            throw .storage(.invalidName, path: describe(path), operation: .create, detail: "\"\(name)\"")
        }
        return path.reduce(url) { $0.appendingPathComponent($1) }
    }
}
