import Glibc

/// A pthread mutex that guards state kept elsewhere (the object that owns it).
///
/// The mutex lives in memory of its own: a pthread mutex must not move, and Swift promises a
/// stable address for memory it is asked to allocate, not for `&property`.
public final class Lock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init() {
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A value behind a pthread mutex. Unlike the standard library's `Mutex`, it holds values that are
/// not `Sendable` (SQLite connections, results of any type), for code that hands such values
/// between threads under its own discipline.
///
/// For a lock with no value, `Lock`: a `Locked<Void>`'s zero-sized value has the address of the
/// field beside it, so ThreadSanitizer takes every locked access to the value for a race with
/// another thread's unlocked (and harmless) read of that field on its way to the lock.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = Lock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    @inline(__always)
    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&value) }
    }
}

/// A counting signal between threads (a semaphore on a mutex and condition variable).
/// Its mutex and condition have memory of their own, as `Lock`'s.
public final class ThreadSignal: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var count = 0

    public init() {
        mutex.initialize(to: pthread_mutex_t())
        condition.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func post() {
        pthread_mutex_lock(mutex)
        count += 1
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Waits for a post; several posts since the last wait count as one wake-up.
    public func wait() {
        pthread_mutex_lock(mutex)
        while count == 0 { pthread_cond_wait(condition, mutex) }
        count = 0
        pthread_mutex_unlock(mutex)
    }

    /// Like `wait`, giving up after `seconds`; true when posted.
    public func wait(seconds: Double) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let ns = Int(deadline.tv_nsec) + Int(seconds * 1_000_000_000)
        deadline.tv_sec += ns / 1_000_000_000
        deadline.tv_nsec = ns % 1_000_000_000
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while count == 0 {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { return false }
        }
        count = 0
        return true
    }
}
