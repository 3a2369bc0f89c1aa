import Dispatch
import TransferModel

/// Time as the core sees it: the wall clock for what is recorded, a monotonic clock for what is
/// measured, and timers. Injected, so that what waits (retry delays, long-poll deadlines, webhook
/// retries, flushes, sweeps) can be tested by moving time by hand rather than by waiting for it.
package protocol ServiceClock: Sendable {
    /// The wall-clock time, as timestamps are recorded.
    func now() -> Timestamp
    /// Seconds on a clock that never goes back, for intervals.
    func monotonicNow() -> Double
    /// Runs `work` once `seconds` have passed: on `executor` when given (the asker's, so the work
    /// finds its state where it left it), otherwise on the clock's own thread (keep it short).
    @discardableResult
    func schedule(after seconds: Double, on executor: DispatchQueue?, _ work: @escaping @Sendable () -> Void) -> ScheduledWork
}

extension ServiceClock {
    @discardableResult
    package func schedule(after seconds: Double, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        schedule(after: seconds, on: nil, work)
    }
}

/// Work a clock will run, until it is cancelled.
package protocol ScheduledWork: Sendable {
    /// The work will not run (unless it is running already).
    func cancel()
}
