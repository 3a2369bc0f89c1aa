import Dispatch
import Reactor
import TransferModel

/// The real clock: the system's clocks, and timers on an event loop of their own.
package final class LoopClock: ServiceClock {
    /// Where the timers run; the API's own timers share it (`TaskCoordinator.clock`).
    package let loop: EventLoop

    package init(loop: EventLoop) {
        self.loop = loop
    }

    package func now() -> Timestamp { Timestamp.now() }

    package func monotonicNow() -> Double { Double(MonotonicClock.now()) / 1_000_000_000 }

    @discardableResult
    package func schedule(after seconds: Double, on executor: DispatchQueue?, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        let timer = LoopTimer(loop: loop)
        // The deadline is taken now, not when the loop gets to it.
        let deadline = MonotonicClock.after(seconds: seconds)
        loop.execute { [loop] in
            timer.armed(loop.scheduleTimer(at: deadline) {
                guard timer.fires() else { return }
                if let executor { executor.async(execute: work) } else { work() }
            })
        }
        return timer
    }
}

/// A timer of `LoopClock`: armed on the loop, cancellable from anywhere.
private final class LoopTimer: ScheduledWork {
    private let loop: EventLoop
    private let state = Locked<(id: TimerID?, cancelled: Bool)>((nil, false))

    init(loop: EventLoop) {
        self.loop = loop
    }

    func armed(_ id: TimerID) {
        state.withLock { $0.id = id }
    }

    /// Whether the timer still fires (it was not cancelled).
    func fires() -> Bool {
        state.withLock { state in
            defer { state.id = nil }
            return !state.cancelled
        }
    }

    func cancel() {
        let id: TimerID? = state.withLock { state in
            state.cancelled = true
            defer { state.id = nil }
            return state.id
        }
        guard let id else { return }
        loop.execute { [loop] in loop.cancelTimer(id) }
    }
}
