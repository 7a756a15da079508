/// The errors Converge reports. Every one leaves the store unchanged.
public enum ConvergeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A replica ID is empty, too long or uses a character outside the allowed set.
    case invalidReplicaID(String)
    /// A key is empty.
    case emptyKey
    /// A value cannot be stored: see ``ValueViolation``.
    case invalidValue(ValueViolation)
    /// A write would break the store's quota: see ``QuotaViolation``.
    case quotaExceeded(QuotaViolation)
    /// Bytes received or read do not form a valid encoding; the text says where.
    case malformed(String)
    /// The storage failed; the text says how and where.
    case storage(String)

    public var description: String {
        switch self {
        case .invalidReplicaID(let text):
            return "invalid replica ID \"\(text)\": use 1...\(ReplicaID.maximumLengthBytes) bytes of ASCII letters, digits and . _ : @ -"
        case .emptyKey:
            return "keys must not be empty"
        case .invalidValue(let violation):
            return "invalid value: \(violation)"
        case .quotaExceeded(let violation):
            return "quota exceeded: \(violation)"
        case .malformed(let detail):
            return "malformed input: \(detail)"
        case .storage(let detail):
            return "storage error: \(detail)"
        }
    }
}

/// Why a value was rejected.
public enum ValueViolation: Hashable, Sendable, CustomStringConvertible {
    /// A double (or a date) is NaN, which has no equality and no canonical form.
    case notANumber
    /// Arrays and dictionaries are nested deeper than ``Value/maximumNestingDepth``.
    case tooDeep(limit: Int)
    /// The canonical encoding is larger than ``Value/maximumEncodedBytes``.
    case tooLarge(bytes: Int, limit: Int)
    /// The object is not one of the property-list types; the text names its type.
    case unsupportedType(String)

    public var description: String {
        switch self {
        case .notANumber: return "NaN is not a storable number"
        case .tooDeep(let limit): return "arrays and dictionaries nest deeper than \(limit) levels"
        case .tooLarge(let bytes, let limit): return "encoded size \(bytes) bytes exceeds the limit of \(limit) bytes"
        case .unsupportedType(let name): return "\(name) is not a property-list type (string, number, bool, data, date, array, dictionary)"
        }
    }
}
