import Glibc

/// The clock leases are judged on locally: CLOCK_BOOTTIME, monotonic like CLOCK_MONOTONIC but
/// counting time the system spent suspended (clock_gettime(2)), during which the store's clock ran
/// on and the leases expired.
public enum LeaseClock {
    public static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    public static func seconds() -> Double { Double(nanoseconds()) / 1e9 }
}
