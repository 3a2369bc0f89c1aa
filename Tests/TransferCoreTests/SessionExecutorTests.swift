import Dispatch
import TestSupport
import Testing
@testable import TransferCore
@testable import TransferModel

/// A session's state is owned by its serial executor: a change asked for from another thread
/// waits for the executor's turn, and one asked for on the executor (where its timers and its
/// delegate channel run) happens in place.
@Suite(.serialized)
struct SessionExecutorTests {
    @Test func aChangeFromAnotherThreadWaitsForTheExecutorsWorkInHand() throws {
        try CoreHarness.withSession(.background) { origin, core, session in
            let id = try core.download(origin.url("/bytes/1000"), in: session)
            _ = try core.completed(id, in: session)
            let held = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let acknowledged = DispatchSemaphore(value: 0)
            session.executor.async {
                held.signal()
                release.wait()
            }
            held.wait()
            DispatchQueue.global().async {
                core.coordinator.acknowledge(session, through: 1) { _ in acknowledged.signal() }
            }
            // While the executor is busy the acknowledgement cannot change the session, so it
            // cannot be stored and answered either; a lock beside the executor would let it.
            let answeredMeanwhile = acknowledged.wait(timeout: .now() + 0.3) == .success
            release.signal()
            #expect(!answeredMeanwhile)
            #expect(acknowledged.wait(timeout: .now() + CoreHarness.patience) == .success)
            #expect(session.onExecutor { session.ackedThrough } == 1)
        }
    }

    @Test func aCallMadeOnTheExecutorRunsInPlace() throws {
        try CoreHarness.withSession(.background) { origin, core, session in
            let id = try core.download(origin.url("/bytes/1000"), in: session)
            _ = try core.completed(id, in: session)
            // As a webhook's outcome or a timer would: entering the executor from itself must not
            // wait for itself.
            let result = try CoreHarness.wait { (answer: @escaping @Sendable (Result<Void, Refusal>) -> Void) in
                session.executor.async {
                    let record = try? core.coordinator.record(session, id)
                    #expect(record?.state == .completed)
                    core.coordinator.acknowledge(session, through: 2, completion: answer)
                }
            }
            #expect(throws: Never.self) { try result.get() }
            #expect(session.onExecutor { session.ackedThrough } == 2)
        }
    }
}
