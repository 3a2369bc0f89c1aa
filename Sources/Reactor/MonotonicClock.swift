import Glibc

/// Monotonic time in nanoseconds: the clock every deadline in the reactor is measured on.
public enum MonotonicClock {
    @inline(__always)
    public static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// `seconds` from now, saturating at `UInt64.max` ("never"): a deadline centuries ahead (a
    /// far-future `begin_at`) must not trap converting to nanoseconds.
    public static func after(seconds: Double) -> UInt64 {
        let start = now()
        let nanoseconds = max(0, seconds) * 1_000_000_000
        guard nanoseconds < Double(UInt64.max - start) else { return UInt64.max }
        return start + UInt64(nanoseconds)
    }

    static let centurySeconds: Double = 100 * 365.25 * 86400
}
