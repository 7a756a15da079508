import Dispatch

/// A task executor that runs its jobs on a serial dispatch queue of its own, so the tasks
/// that prefer it (``AutomaticSync``'s timer and exchanges) keep running while the
/// cooperative thread pool is busy with other work (an app, or a test suite, that blocks
/// its threads).
final class SerialQueueExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: the queue is the only state, and dispatch queues are thread-safe.
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
