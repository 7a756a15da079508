import Foundation
import Synchronization

/// One line on a terminal's standard error that counts finished runs while a long sweep of
/// seeds goes on, rewritten in place (at most ten times a second) and erased at the end.
/// Nothing is written when standard error is not a terminal (a log, a pipe, CI), so output
/// that is kept stays line by line.
final class ProgressLine: Sendable {
    private struct Counts {
        var done = 0
        var failed = 0
        var lastWrite: ContinuousClock.Instant?
    }

    private let total: Int
    private let noun: String
    private let counts = Mutex(Counts())
    private let enabled: Bool

    /// A progress line over `total` runs, shown only if standard error is a terminal and
    /// there is more than one run.
    init(total: Int, noun: String = "runs") {
        self.total = total
        self.noun = noun
        enabled = total > 1 && isatty(STDERR_FILENO) == 1
    }

    /// One more run finished; `passed` tells whether it passed.
    func advance(passed: Bool) {
        guard enabled else { return }
        counts.withLock { counts in
            counts.done += 1
            if !passed { counts.failed += 1 }
            let now = ContinuousClock.now
            if let last = counts.lastWrite, now - last < .milliseconds(100), counts.done < total { return }
            counts.lastWrite = now
            let failed = counts.failed == 0 ? "" : ", \(counts.failed) failed"
            FileHandle.standardError.write(Data("\r\(counts.done) of \(total) \(noun) done\(failed)\u{1B}[K".utf8))
        }
    }

    /// Erases the line, so what follows starts on a clean one.
    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
