import Dispatch
import Reactor
import TestSupport
import Testing
@testable import TransferCore
@testable import TransferModel

/// What the core schedules runs on its injected clock: moved by hand here, a timer fires when
/// time reaches it and not a moment before, and no test waits for real time to pass.
@Suite(.serialized)
struct FakeClockTests {
    /// Runs `body` with a loopback origin and a core on a `ManualClock`.
    static func withCore(limits: TaskCoordinator.Limits = TaskCoordinator.Limits(),
                         _ body: (TestOrigin, CoreHarness, ManualClock) throws -> Void) throws
    {
        let origin = try TestOrigin()
        let clock = ManualClock()
        let core = try CoreHarness(time: clock, limits: limits)
        defer { clock.stop(); core.tearDown(); origin.server.shutdown() }
        try body(origin, core, clock)
    }

    static func hits(_ origin: TestOrigin) -> Int { origin.hits.withLock { $0["/status", default: 0] } }

    @Test func aRetryStartsWhenItsDelayHasPassedAndNotBefore() throws {
        try Self.withCore { origin, core, clock in
            let session = try core.putSession("s", mode: .background, configuration: """
                {"retry": {"max_attempts": 2, "backoff_initial_s": 5, "backoff_max_s": 5, "on_http_status": [503]}}
                """)
            let id = try core.download(origin.url("/status/503"), in: session)
            // The retry's start and the flush of the response head wait on the clock.
            try CoreHarness.poll("the first attempt's retry to be scheduled") { clock.waiting == 2 }
            let record = try core.coordinator.record(session, id)
            let delay = try #require(record.nextAttemptAt).seconds - clock.now().seconds
            // The backoff of 5 s, spread by the jitter.
            #expect(delay >= 5 * RetryPolicy.jitter.lowerBound - 0.01 && delay <= 5)
            clock.advance(by: delay - 0.01)
            #expect(Self.hits(origin) == 1)
            #expect(try core.coordinator.record(session, id).metrics.attempts == 1)
            clock.advance(by: 0.02)
            let done = try core.completed(id, in: session)
            #expect(Self.hits(origin) == 2)
            #expect(done.metrics.attempts == 2)
        }
    }

    @Test func aTaskLongPollIsAnsweredAtItsDeadline() throws {
        try Self.withCore { origin, core, clock in
            let session = try core.putSession("s", mode: .default)
            let outcome = try core.create(#"{"kind": "download", "request": {"url": "\#(origin.url("/bytes/10"))"}, "start": false}"#,
                                          in: session).get()
            guard case .created(let created) = outcome else { throw HarnessError("expected a new task") }
            let answer = Locked<TaskRecord?>(nil)
            core.coordinator.waitForTask(session, created[0].id, seconds: 30) { result in
                answer.withLock { $0 = try? result.get() }
            }
            clock.advance(by: 29.9)
            #expect(answer.withLock { $0 } == nil)
            clock.advance(by: 0.1)
            #expect(answer.withLock { $0 }?.state == .suspended)
        }
    }

    @Test func anEventLongPollIsAnsweredEmptyAtItsDeadline() throws {
        try Self.withCore { _, core, clock in
            let session = try core.putSession("s", mode: .default)
            let answer = Locked<[Event]?>(nil)
            core.coordinator.waitForEvents(session, after: 0, limit: 10, seconds: 10) { result in
                answer.withLock { $0 = try? result.get() }
            }
            // The journal is read off the caller's thread first; the deadline is set after.
            try CoreHarness.poll("the deadline to be set") { clock.waiting == 1 }
            clock.advance(by: 9.9)
            #expect(answer.withLock { $0 } == nil)
            clock.advance(by: 0.1)
            #expect(answer.withLock { $0 }?.isEmpty == true)
        }
    }

    @Test func aFailedWebhookIsSentAgainAfterItsScheduledDelay() throws {
        try Self.withCore(limits: TaskCoordinator.Limits(webhookSchedule: [0, 5, 300])) { origin, core, clock in
            let delegate = Delegate(url: origin.url("/status/500"), secret: DelegateTests.secret, events: [.taskCreated])
            let session = try core.putSession("s", mode: .default, delegate: delegate)
            _ = try core.create(#"{"kind": "download", "request": {"url": "\#(origin.url("/bytes/10"))"}, "start": false}"#,
                                in: session).get()
            // The first attempt failed: its retry and the save of the attempt wait on the clock.
            try CoreHarness.poll("the first attempt to fail") { clock.waiting == 2 }
            #expect(Self.hits(origin) == 1)
            clock.advance(by: DelegateChannel.saveDelay)
            #expect(clock.waiting == 1)
            // 5 s give or take the jitter (±10 %).
            clock.advance(by: 4.4)
            #expect(clock.waiting == 1)
            #expect(Self.hits(origin) == 1)
            clock.advance(by: 1.2)
            try CoreHarness.poll("the second attempt") { Self.hits(origin) == 2 }
            // Its failure taken in (the next retry and the save wait on the clock again), so no
            // webhook is in flight when the core stops.
            try CoreHarness.poll("the second attempt to fail") { clock.waiting == 2 }
        }
    }
}
