import Converge

/// The files of a shared folder, as the shared-folder transport sees them: the seam
/// between ``SharedFolderSync`` and a file system.
///
/// Paths are arrays of plain names relative to the shared folder (`[account, replica,
/// file]`); the transport never builds a path from text it has not checked. Implementations:
/// ``FileSystemFolder`` (a real folder, which a file-sync service or network share may
/// carry to other machines), ``InMemoryFolder`` (one process, for tests), and the
/// simulator's folder, whose files reach other devices late, out of order or never.
///
/// What the transport relies on, as a file-sync service provides it: a file appears whole
/// or not at all (written under a hidden temporary name, then renamed), and names that
/// start with "." are never listed.
public protocol SharedFolderFiles: Sendable {
    /// The names in the folder at `path`, without hidden ones (starting with "."), in any
    /// order; empty if the folder does not exist.
    ///
    /// - Throws: `ConvergeError.storage` if the folder exists but cannot be read.
    func names(in path: [String]) throws(ConvergeError) -> [String]

    /// The bytes of the file at `path`, or `nil` if there is none (it may have been
    /// removed since it was listed).
    ///
    /// - Throws: `ConvergeError.storage` if the file exists but cannot be read;
    ///   `ConvergeError.malformed` (`limitExceeded`) if it is larger than
    ///   `SyncMessage.maximumEncodedBytes`, found before its bytes are read.
    func contents(of path: [String]) throws(ConvergeError) -> [UInt8]?

    /// Writes the file at `path` whole, creating the folders on the way: readers see
    /// either the previous state or all of `bytes`, never part of them.
    ///
    /// - Throws: `ConvergeError.storage`; no partial file is left behind.
    func write(_ bytes: [UInt8], to path: [String]) throws(ConvergeError)

    /// Removes the file at `path`; removing one that does not exist does nothing.
    ///
    /// - Throws: `ConvergeError.storage` if the file exists and cannot be removed.
    func remove(_ path: [String]) throws(ConvergeError)

    /// How to name `path` in reports and messages (for a real folder, its file-system path).
    func describe(_ path: [String]) -> String
}
