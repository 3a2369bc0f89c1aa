import Reactor
import Testing
@testable import TransferCore

/// Reported changes of many tasks are flushed together, by one timer a window.
struct PendingChangeFlushTests {
    @Test func theTasksOfAWindowAreFlushedTogetherAndLaterOnesInTheNext() {
        let clock = ManualClock()
        let pending = PendingChangeFlush<Int>(delay: 0.05, clock: clock)
        let flushes = Locked<[[Int]]>([])
        let record: @Sendable ([Int]) -> Void = { items in flushes.withLock { $0.append(items) } }
        for i in 0..<100 { pending.add(i, flush: record) }
        #expect(clock.waiting == 1)
        clock.advance(by: 0.04)
        #expect(flushes.withLock { $0 }.isEmpty)
        clock.advance(by: 0.01)
        pending.add(100, flush: record)
        clock.advance(by: 0.05)
        #expect(flushes.withLock { $0 } == [Array(0..<100), [100]])
    }
}
