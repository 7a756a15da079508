#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A lock around a value that parks waiting threads at once (a pthread mutex).
///
/// The hub holds locks across system calls (an account's lock across its commit's fsync,
/// the log's across a write) with dozens of connection threads on few cores. The standard
/// library's `Mutex` spins before it parks, and measured under load it spent a quarter of
/// the hub's CPU spinning while the holder waited for the disk; parking gives that CPU to
/// the threads that have work.
final class ParkingLock<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is read and written only between lock and unlock.
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
