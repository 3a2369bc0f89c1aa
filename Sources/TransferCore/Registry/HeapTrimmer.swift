import CLinux
import Dispatch
import Reactor

/// Hands the allocator's free memory back to the system once a burst of work is over. glibc keeps
/// what was freed inside its arenas (one per thread that allocated, up to eight per core) and
/// returns only the free top of each: after 2,000 small tasks came and went, 30-45 MB of freed
/// memory stayed resident beside 10-17 MB in use, until `malloc_trim`. Trims run on a queue of their
/// own, at most one a second however many sessions go quiet.
final class HeapTrimmer: Sendable {
    private let queue = DispatchQueue(label: "transferd.heap-trim", qos: .utility)
    /// Whether a trim is scheduled, and when the last one started (monotonic ns).
    private let state = Locked<(scheduled: Bool, last: UInt64)>((false, 0))
    private let interval: UInt64 = 1_000_000_000
    /// Trims done, for tests.
    private let count = Locked(0)

    var trims: Int { count.withLock { $0 } }

    /// Asks for a trim: now, or a second after the last one.
    func request() {
        let delay: UInt64? = state.withLock { s in
            if s.scheduled { return nil }
            s.scheduled = true
            let due = s.last == 0 ? 0 : s.last + interval
            let now = MonotonicClock.now()
            return due > now ? due - now : 0
        }
        guard let delay else { return }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [self] in
            // Before the trim: a request that arrives while it runs schedules the next one.
            state.withLock { $0 = (false, MonotonicClock.now()) }
            malloc_trim(0)
            count.withLock { $0 += 1 }
        }
    }
}
