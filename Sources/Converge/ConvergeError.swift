/// The errors Converge reports. Every one leaves the store unchanged.
///
/// Each case carries data a caller can match on (the kind of storage failure and its path,
/// the problem in malformed input and its offset, the limit a write would break); the
/// ``description`` is derived from that data, never the other way round.
///
/// ```swift
/// do {
///     try store.setValue("v", forKey: "k")
/// } catch .storage(let failure) where failure.kind == .diskFull {
///     // ask the user to free some space
/// } catch {
///     print(error)   // a sentence naming what failed
/// }
/// ```
public enum ConvergeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A replica ID is empty, too long or uses a character outside the allowed set.
    case invalidReplicaID(String)
    /// A key is empty.
    case emptyKey
    /// A value cannot be stored: see ``ValueViolation``.
    case invalidValue(ValueViolation)
    /// A write would break the store's quota: see ``QuotaViolation``.
    case quotaExceeded(QuotaViolation)
    /// Bytes received or read do not form a valid encoding: see ``MalformedInput``.
    case malformed(MalformedInput)
    /// The storage failed: see ``StorageFailure``.
    case storage(StorageFailure)
    /// The hub (or the peer a transport talks to) could not be reached; the text says
    /// which. Nothing was exchanged, so trying again later is safe.
    case unreachable(String)

    /// A sentence saying what went wrong, derived from the case's data.
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
        case .malformed(let input):
            return "malformed input: \(input)"
        case .storage(let failure):
            return "storage error: \(failure)"
        case .unreachable(let peer):
            return "cannot reach \(peer)"
        }
    }
}

extension ConvergeError {
    /// A ``malformed(_:)`` error: `problem`, described by `detail`, at byte `offset` of the
    /// input if known.
    package static func malformed(_ problem: MalformedInput.Problem, _ detail: String, at offset: Int? = nil) -> ConvergeError {
        .malformed(MalformedInput(problem: problem, detail: detail, offset: offset))
    }

    /// A ``storage(_:)`` error.
    package static func storage(_ kind: StorageFailure.Kind, path: String, operation: StorageFailure.Operation,
                                detail: String? = nil) -> ConvergeError {
        .storage(StorageFailure(kind: kind, path: path, operation: operation, detail: detail))
    }
}
