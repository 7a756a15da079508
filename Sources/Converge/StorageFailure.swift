import Foundation

/// Why a storage failed, where, and while doing what: the data of
/// ``ConvergeError/storage(_:)``.
///
/// Match on ``kind``, as on GRDB's `ResultCode`; the ``description`` is derived from the
/// fields. A storage never repairs or resets what it cannot read: a failure at open leaves
/// the file as it was.
public struct StorageFailure: Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure. An open set, like swift-system's `Errno`: match the static
    /// members; a storage may define more.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The kind's stable name.
        public let rawValue: String

        /// Creates a kind with a stable name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The disk (or the file system's quota) is full.
        public static let diskFull = Kind(rawValue: "diskFull")
        /// The file or its folder is read-only.
        public static let readOnly = Kind(rawValue: "readOnly")
        /// The file cannot be opened or created (a missing folder, most often).
        public static let cannotOpen = Kind(rawValue: "cannotOpen")
        /// The process may not read or write the file.
        public static let permissionDenied = Kind(rawValue: "permissionDenied")
        /// Another process holds the file locked.
        public static let locked = Kind(rawValue: "locked")
        /// The operating system reported an I/O error.
        public static let ioError = Kind(rawValue: "ioError")
        /// The file is not a database at all (garbage, or some other kind of file).
        public static let notADatabase = Kind(rawValue: "notADatabase")
        /// The file is a database of another program, not a Converge store.
        public static let foreignStore = Kind(rawValue: "foreignStore")
        /// The store is damaged or truncated: what it holds cannot be read back.
        public static let corrupt = Kind(rawValue: "corrupt")
        /// The store was written by a newer version of Converge, whose schema this one
        /// cannot read.
        public static let newerSchema = Kind(rawValue: "newerSchema")
        /// The file system lacks something the storage needs (for SQLite, a WAL journal).
        public static let unsupported = Kind(rawValue: "unsupported")
        /// A name that would become a path is not a plain file name.
        public static let invalidName = Kind(rawValue: "invalidName")
        /// A failure of another kind; the detail says what the system reported.
        public static let other = Kind(rawValue: "other")

        /// The kind's stable name.
        public var description: String { rawValue }

        /// The kind of a failed system call's `errno`.
        package init(posixErrorCode code: Int32) {
            switch code {
            case ENOSPC, EDQUOT: self = .diskFull
            case EROFS: self = .readOnly
            case EACCES, EPERM: self = .permissionDenied
            case ENOENT, ENOTDIR, EISDIR, ENAMETOOLONG, ELOOP: self = .cannotOpen
            case EIO: self = .ioError
            case EAGAIN, EBUSY, ETXTBSY: self = .locked
            default: self = .other
            }
        }

        /// The kind of an error thrown by Foundation's file APIs (`FileManager`, `Data`).
        package init(_ error: any Error) {
            let error = error as NSError
            if error.domain == NSPOSIXErrorDomain {
                self.init(posixErrorCode: Int32(error.code))
            } else if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
                self.init(posixErrorCode: Int32(underlying.code))
            } else {
                switch CocoaError.Code(rawValue: error.code) {
                case .fileWriteOutOfSpace: self = .diskFull
                case .fileWriteVolumeReadOnly: self = .readOnly
                case .fileReadNoPermission, .fileWriteNoPermission: self = .permissionDenied
                case .fileNoSuchFile, .fileReadNoSuchFile: self = .cannotOpen
                case .fileLocking: self = .locked
                default: self = .other
                }
            }
        }
    }

    /// What the storage was doing when it failed.
    public enum Operation: String, Hashable, Sendable {
        /// Opening (or creating) the store.
        case open
        /// Reading what is stored.
        case read
        /// Recording a change.
        case write
        /// Checking the store's integrity.
        case check
        /// Creating a folder or file the store needs.
        case create
    }

    /// The kind of failure.
    public var kind: Kind
    /// The file or folder concerned.
    public var path: String
    /// What the storage was doing.
    public var operation: Operation
    /// What the underlying system reported, or what was found (a version, an SQLite
    /// message), if anything.
    public var detail: String?

    /// Creates a description of a storage failure.
    public init(kind: Kind, path: String, operation: Operation, detail: String? = nil) {
        self.kind = kind
        self.path = path
        self.operation = operation
        self.detail = detail
    }

    /// "cannot *operation* *path*: *what the kind means* (*detail*)".
    public var description: String {
        "cannot \(operation.rawValue) \(path): \(summary)"
    }

    private var summary: String {
        let detailSuffix = detail.map { " (\($0))" } ?? ""
        switch kind {
        case .diskFull: return "the disk is full" + detailSuffix
        case .readOnly: return "the file or its folder is read-only" + detailSuffix
        case .cannotOpen: return "cannot open the file (missing folder or no permission)" + detailSuffix
        case .permissionDenied: return "permission denied" + detailSuffix
        case .locked: return "the store is locked by another process" + detailSuffix
        case .ioError: return "I/O error" + detailSuffix
        case .notADatabase: return "not a Converge store (not a database file)" + detailSuffix
        case .foreignStore: return "not a Converge store (another program's database)" + detailSuffix
        case .corrupt: return "the store is corrupt" + detailSuffix
        case .newerSchema: return "written by a newer version of Converge" + detailSuffix
        case .unsupported: return "the file system does not support the store" + detailSuffix
        case .invalidName: return "not a plain file name" + detailSuffix
        default: return detail ?? kind.rawValue
        }
    }
}
