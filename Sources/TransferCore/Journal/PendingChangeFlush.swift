import Reactor

/// The tasks whose reported changes (response heads, redirects) wait to be stored, flushed
/// together by one timer: a change waits at most `delay`, and a burst of small downloads costs one
/// timer a window instead of one (and a wake-up of the timer loop) per task — two thousand
/// downloads had the timer thread spend 0.05–0.1 ms a task on timers that, their tasks long
/// completed, had nothing left to store.
final class PendingChangeFlush<Item>: Sendable {
    private let delay: Double
    private let clock: any ServiceClock
    private let waiting = Locked<(tasks: [Item], scheduled: Bool)>(([], false))

    init(delay: Double = 0.2, clock: any ServiceClock) {
        self.delay = delay
        self.clock = clock
    }

    /// Adds a task to the next flush; `flush` gets every task added until it runs.
    func add(_ item: Item, flush: @escaping @Sendable ([Item]) -> Void) {
        let schedule = waiting.withLock { waiting in
            waiting.tasks.append(item)
            defer { waiting.scheduled = true }
            return !waiting.scheduled
        }
        guard schedule else { return }
        clock.schedule(after: delay) { [self] in
            flush(waiting.withLock { waiting in
                defer { waiting = ([], false) }
                return waiting.tasks
            })
        }
    }
}
