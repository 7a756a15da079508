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

    /// A sentence saying why the value was rejected.
    public var description: String {
        switch self {
        case .notANumber: return "NaN is not a storable number"
        case .tooDeep(let limit): return "arrays and dictionaries nest deeper than \(limit) levels"
        case .tooLarge(let bytes, let limit): return "encoded size \(bytes) bytes exceeds the limit of \(limit) bytes"
        case .unsupportedType(let name): return "\(name) is not a property-list type (string, number, bool, data, date, array, dictionary)"
        }
    }
}
