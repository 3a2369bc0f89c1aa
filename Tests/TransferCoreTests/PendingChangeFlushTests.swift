import Reactor
import Testing
@testable import TransferCore

/// Reported changes of many tasks are flushed together, by one timer a window.
struct PendingChangeFlushTests {
    @Test func theTasksOfAWindowAreFlushedTogetherAndLaterOnesInTheNext() {
        let clock = EventLoop(name: "flush-test")
        clock.start()
        let pending = PendingChangeFlush<Int>(delay: 0.05)
        let flushes = Locked<[[Int]]>([])
        let flushed = ThreadSignal()
        let record: @Sendable ([Int]) -> Void = { items in
            flushes.withLock { $0.append(items) }
            flushed.post()
        }
        for i in 0..<100 { pending.add(i, clock: clock, flush: record) }
        #expect(flushed.wait(seconds: 5))
        pending.add(100, clock: clock, flush: record)
        #expect(flushed.wait(seconds: 5))
        #expect(flushes.withLock { $0 } == [Array(0..<100), [100]])
        clock.stopAndJoin()
    }
}
