import Reactor
import Testing

struct MonotonicClockTests {
    @Test func aDeadlineIsNowPlusTheSeconds() {
        let before = MonotonicClock.now()
        let deadline = MonotonicClock.after(seconds: 2)
        #expect(deadline >= before + 2_000_000_000)
        #expect(deadline < MonotonicClock.now() + 3_000_000_000)
    }

    @Test func negativeSecondsMeanNow() {
        #expect(MonotonicClock.after(seconds: -5) <= MonotonicClock.now())
    }

    /// A `begin_at` centuries ahead: more nanoseconds than a UInt64 holds saturates to "never"
    /// instead of trapping.
    @Test(arguments: [600.0 * 365 * 86400, 1e30, Double.infinity])
    func farDeadlinesSaturate(_ seconds: Double) {
        #expect(MonotonicClock.after(seconds: seconds) == UInt64.max)
    }
}
