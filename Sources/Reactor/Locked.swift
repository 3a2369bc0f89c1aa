import Glibc

/// A value behind a pthread mutex. Unlike the standard library's `Mutex`, it holds values that are
/// not `Sendable` (SQLite connections, results of any type), for code that hands such values
/// between threads under its own discipline.
public final class Locked<Value>: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(&mutex, nil)
    }

    deinit { pthread_mutex_destroy(&mutex) }

    @inline(__always)
    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body(&value)
    }
}

/// A counting signal between threads (a semaphore on a mutex and condition variable).
public final class ThreadSignal: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var condition = pthread_cond_t()
    private var count = 0

    public init() {
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&condition, nil)
    }

    deinit {
        pthread_cond_destroy(&condition)
        pthread_mutex_destroy(&mutex)
    }

    public func post() {
        pthread_mutex_lock(&mutex)
        count += 1
        pthread_cond_signal(&condition)
        pthread_mutex_unlock(&mutex)
    }

    /// Waits for a post; several posts since the last wait count as one wake-up.
    public func wait() {
        pthread_mutex_lock(&mutex)
        while count == 0 { pthread_cond_wait(&condition, &mutex) }
        count = 0
        pthread_mutex_unlock(&mutex)
    }

    /// Like `wait`, giving up after `seconds`; true when posted.
    public func wait(seconds: Double) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let ns = Int(deadline.tv_nsec) + Int(seconds * 1_000_000_000)
        deadline.tv_sec += ns / 1_000_000_000
        deadline.tv_nsec = ns % 1_000_000_000
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        while count == 0 {
            if pthread_cond_timedwait(&condition, &mutex, &deadline) == ETIMEDOUT { return false }
        }
        count = 0
        return true
    }
}
