import Glibc

/// Monotonic time in nanoseconds: the clock every deadline in the reactor is measured on.
public enum MonotonicClock {
    @inline(__always)
    public static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    public static func after(seconds: Double) -> UInt64 {
        now() &+ UInt64(max(0, seconds) * 1_000_000_000)
    }
}
