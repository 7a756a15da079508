import Converge
import Synchronization

/// A shared folder in memory, shared by every store of a process that syncs through it:
/// for tests that need several devices and no disk. Files appear at once, whole, to
/// every reader.
public final class InMemoryFolder: SharedFolderFiles {
    private let files = Mutex<[[String]: [UInt8]]>([:])

    /// An empty folder.
    public init() {}

    public func names(in path: [String]) throws(ConvergeError) -> [String] {
        let names = files.withLock { files in
            Set(files.keys.filter { $0.count > path.count && Array($0.prefix(path.count)) == path }.map { $0[path.count] })
        }
        return names.filter { !$0.hasPrefix(".") }.sortedByUTF8()
    }

    public func contents(of path: [String]) throws(ConvergeError) -> [UInt8]? {
        files.withLock { $0[path] }
    }

    public func write(_ bytes: [UInt8], to path: [String]) throws(ConvergeError) {
        files.withLock { $0[path] = bytes }
    }

    public func remove(_ path: [String]) throws(ConvergeError) {
        _ = files.withLock { $0.removeValue(forKey: path) }
    }

    public func describe(_ path: [String]) -> String {
        "memory:/" + path.joined(separator: "/")
    }
}
