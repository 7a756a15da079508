#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lets threads that each need a durable write share one transaction (group commit): the
/// first to arrive while no batch is running takes every write waiting, runs them together,
/// and hands each writer its own outcome; the others wait and are woken with theirs.
///
/// One flush of the disk then acknowledges the exchanges of many accounts, instead of one
/// flush each; a writer is never answered before the transaction holding its write has
/// committed.
final class GroupCommit<Write, Outcome>: @unchecked Sendable {
    // @unchecked Sendable: every stored property is read and written only under `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let finished = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var waiting: [(ticket: Int, write: Write)] = []
    private var outcomes: [Int: Outcome] = [:]
    private var nextTicket = 0
    private var batchRunning = false
    /// The most writes run in one batch.
    let maximumBatch: Int

    init(maximumBatch: Int = 256) {
        self.maximumBatch = maximumBatch
        mutex.initialize(to: pthread_mutex_t())
        finished.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(finished, nil)
    }

    deinit {
        pthread_cond_destroy(finished)
        pthread_mutex_destroy(mutex)
        finished.deallocate()
        mutex.deallocate()
    }

    /// Submits `write` and returns its outcome once the batch that carried it has run.
    ///
    /// - Parameter run: Runs a batch and returns one outcome per write, in order.
    func submit(_ write: Write, run: ([Write]) -> [Outcome]) -> Outcome {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let ticket = nextTicket
        nextTicket += 1
        waiting.append((ticket, write))
        while true {
            if let outcome = outcomes.removeValue(forKey: ticket) { return outcome }
            if batchRunning {
                pthread_cond_wait(finished, mutex)
                continue
            }
            // Lead a batch: everything waiting now, this write included.
            let batch = Array(waiting.prefix(maximumBatch))
            waiting.removeFirst(batch.count)
            batchRunning = true
            pthread_mutex_unlock(mutex)
            let results = run(batch.map(\.write))
            pthread_mutex_lock(mutex)
            precondition(results.count == batch.count, "a batch must give one outcome per write")
            for (entry, result) in zip(batch, results) { outcomes[entry.ticket] = result }
            batchRunning = false
            pthread_cond_broadcast(finished)
        }
    }
}
