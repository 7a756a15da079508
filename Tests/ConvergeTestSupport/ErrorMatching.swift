import Converge

/// The problem of the ``ConvergeError/malformed(_:)`` error `body` throws, or `nil` if it
/// throws another error or nothing: `#expect(malformedProblem { try decode() } == .truncated)`.
public func malformedProblem<T>(_ body: () throws -> T) -> MalformedInput.Problem? {
    do {
        _ = try body()
        return nil
    } catch {
        guard case .malformed(let input) = error as? ConvergeError else { return nil }
        return input.problem
    }
}

/// The ``ConvergeError/storage(_:)`` failure `body` throws, or `nil` if it throws another
/// error or nothing: `#expect(storageFailure { try open() }?.kind == .corrupt)`.
public func storageFailure<T>(_ body: () throws -> T) -> StorageFailure? {
    do {
        _ = try body()
        return nil
    } catch {
        guard case .storage(let failure) = error as? ConvergeError else { return nil }
        return failure
    }
}
