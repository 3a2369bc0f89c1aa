import Dispatch
import Reactor
import TransferModel
@testable import TransferCore

/// A clock whose time moves only when a test moves it: `advance(by:)` runs, in deadline order,
/// the work that came due, on the executor each asker named (waited for) or on the caller's thread.
final class ManualClock: ServiceClock {
    private struct Pending {
        let deadline: Double
        let order: Int
        let executor: DispatchQueue?
        let work: @Sendable () -> Void
        let cancelled: Locked<Bool>
    }

    private let state: Locked<(now: Double, wall: Timestamp, next: Int, pending: [Pending], stopped: Bool)>

    init(wall: Timestamp = Timestamp(milliseconds: 1_700_000_000_000)) {
        state = Locked((0, wall, 0, [], false))
    }

    func now() -> Timestamp { state.withLock { $0.wall } }

    func monotonicNow() -> Double { state.withLock { $0.now } }

    /// How many timers wait, not cancelled.
    var waiting: Int { state.withLock { $0.pending.filter { !$0.cancelled.withLock { $0 } }.count } }

    @discardableResult
    func schedule(after seconds: Double, on executor: DispatchQueue?, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        let cancelled = Locked(false)
        state.withLock { s in
            guard !s.stopped else { return }
            s.pending.append(Pending(deadline: s.now + max(0, seconds), order: s.next, executor: executor, work: work, cancelled: cancelled))
            s.next += 1
        }
        return ManualWork(cancelled: cancelled)
    }

    /// Moves time on by `seconds`, running each timer that comes due at its moment — including
    /// those that due work schedules meanwhile.
    func advance(by seconds: Double) {
        let end = state.withLock { $0.now + seconds }
        while let due = takeDue(before: end) {
            guard !due.cancelled.withLock({ $0 }) else { continue }
            if let executor = due.executor { executor.sync(execute: due.work) } else { due.work() }
        }
        state.withLock { s in
            s.wall = s.wall.adding(seconds: end - s.now)
            s.now = end
        }
    }

    /// Drops every timer that has not run, and any asked for later (an answer still in flight at
    /// the end of a test schedules one), as the service's clock does when it stops: their work
    /// holds the core, which would otherwise outlive the test (LeakSanitizer reports it).
    func stop() {
        state.withLock { s in
            s.pending.removeAll()
            s.stopped = true
        }
    }

    private func takeDue(before end: Double) -> Pending? {
        state.withLock { s in
            guard let index = s.pending.indices.min(by: { (s.pending[$0].deadline, s.pending[$0].order) < (s.pending[$1].deadline, s.pending[$1].order) }),
                  s.pending[index].deadline <= end else { return nil }
            let due = s.pending.remove(at: index)
            s.wall = s.wall.adding(seconds: due.deadline - s.now)
            s.now = due.deadline
            return due
        }
    }
}

private struct ManualWork: ScheduledWork {
    let cancelled: Locked<Bool>
    func cancel() { cancelled.withLock { $0 = true } }
}
