import Glibc

/// Monotonic time in nanoseconds: the clock every deadline in the reactor is measured on.
public enum MonotonicClock {
    @inline(__always)
    public static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// A deadline `seconds` from now. Beyond a century it is a century away: nanoseconds in a
    /// UInt64 run out at 584 years, and converting a larger Double traps (a task with a
    /// far-future `begin_at` would crash the process, and a durable one at every start).
    public static func after(seconds: Double) -> UInt64 {
        now() &+ UInt64(min(max(0, seconds), centurySeconds) * 1_000_000_000)
    }

    static let centurySeconds: Double = 100 * 365.25 * 86400
}
