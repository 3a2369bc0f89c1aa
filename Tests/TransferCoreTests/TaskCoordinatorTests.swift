import TestSupport
import Testing
@testable import TransferCore
@testable import TransferModel

/// The task core through the calls the API makes: a real coordinator, engine and loopback origin,
/// the store in memory. Tests wait for events and completions, never for time.
@Suite(.serialized)
struct TaskCoordinatorTests {
    static let size = 200_000
    static let sha256 = TestOrigin.sha256(TestOrigin.content(size))

    @Test func downloadCompletesWithItsEventsInSeqOrder() throws {
        try CoreHarness.withSession(.background) { origin, core, session in
            let id = try core.download(origin.url("/bytes/\(Self.size)"), in: session)
            let task = try core.completed(id, in: session)

            #expect(task.error == nil)
            #expect(task.result?.sha256 == Self.sha256)
            #expect(task.result?.size == Int64(Self.size))
            let events = try core.storedEvents(of: "s")
            #expect(events.map(\.type) == [.taskCreated, .taskResponseReceived, .taskFinishedDownloading, .taskCompleted,
                                           .sessionAllTasksFinished])
            #expect(events.map(\.seq) == Array(1...Int64(events.count)))
        }
    }

    @Test func suspendedDownloadResumesWithRange() throws {
        try CoreHarness.withSession(.background) { origin, core, session in
            let id = try core.downloadHeldHalfway(Self.size, from: origin, key: "suspend", in: session)

            let suspended = try CoreHarness.wait { core.coordinator.suspend(session, id, completion: $0) }.get()
            #expect(suspended.state == .suspended)
            _ = try CoreHarness.wait { core.coordinator.resume(session, id, completion: $0) }.get()
            let task = try core.completed(id, in: session)

            #expect(task.error == nil)
            #expect(task.result?.sha256 == Self.sha256)
            #expect(origin.ranges.withLock { $0 } == ["bytes=\(Self.size / 2)-"])
            let types = try core.storedEvents(of: "s").map(\.type)
            #expect(types.contains(.taskSuspended) && types.contains(.taskResumed) && types.contains(.taskResumedAtOffset))
        }
    }

    @Test func cancelProducesResumeDataThatANewTaskCompletes() throws {
        try CoreHarness.withSession(.default) { origin, core, session in
            let id = try core.downloadHeldHalfway(Self.size, from: origin, key: "cancel", in: session)

            let cancelled = try CoreHarness.wait {
                core.coordinator.cancel(session, id, produceResumeData: true, completion: $0)
            }.get()
            #expect(cancelled.error?.code == .cancelled)
            let token = try #require(cancelled.error?.resumeData)

            let outcome = try core.create(#"{"kind": "download", "resume_data": "\#(token)"}"#, in: session).get()
            guard case .created(let created) = outcome else { Issue.record("expected a new task, got \(outcome)"); return }
            let continued = try core.completed(created[0].id, in: session)

            #expect(continued.error == nil)
            #expect(continued.result?.sha256 == Self.sha256)
            #expect(origin.ranges.withLock { $0 } == ["bytes=\(Self.size / 2)-"])
        }
    }

    @Test func finishInvalidationLetsTheRunningTaskCompleteFirst() throws {
        try CoreHarness.withSession(.background) { origin, core, session in
            let id = try core.downloadHeldHalfway(Self.size, from: origin, key: "finish", in: session)

            try CoreHarness.wait { core.coordinator.invalidate(session, mode: .finish, completion: $0) }.get()
            // The download cannot end while the origin holds it back: the session waits for it.
            #expect(session.locked { session.lifecycle.status } == .invalidating)
            origin.release()
            try core.awaitEvent(.sessionInvalidated, in: session)

            let task = try core.completed(id, in: session)
            #expect(task.error == nil)
            #expect(task.result?.sha256 == Self.sha256)
            let types = try core.storedEvents(of: "s").map(\.type)
            #expect(types.suffix(3) == [.taskCompleted, .sessionAllTasksFinished, .sessionInvalidated])
        }
    }

    @Test func creationWithTheSameIdempotencyKeyReturnsTheSameTask() throws {
        try CoreHarness.withSession(.background) { origin, core, session in
            let json = #"{"kind": "download", "request": {"url": "\#(origin.url("/bytes/100"))"}}"#
            let claim = IdempotencyClaim(key: "k1", bodyHash: "body-1")

            guard case .created(let created) = try core.create(json, in: session, idempotency: claim).get() else {
                Issue.record("the first creation did not create"); return
            }
            guard case .replayed(let id, let reply) = try core.create(json, in: session, idempotency: claim).get() else {
                Issue.record("the second creation was not a replay"); return
            }
            #expect(id == created[0].id)
            #expect(reply == created[0].reply)
            let reused = try core.create(json, in: session, idempotency: IdempotencyClaim(key: "k1", bodyHash: "body-2"))
            #expect(throws: Refusal.self) { try reused.get() }
            #expect(try CoreHarness.wait { core.coordinator.listTasks(session, after: 0, state: nil, kind: nil, limit: 10, answer: $0) }.get().tasks.count == 1)
        }
    }

    @Test func aClientChosenIDTakenIsRefused() throws {
        try CoreHarness.withSession(.background) { origin, core, session in
            let json = #"{"kind": "download", "id": "mine", "request": {"url": "\#(origin.url("/bytes/100"))"}}"#

            _ = try core.create(json, in: session).get()
            let again = try core.create(json, in: session)

            guard case .failure(let refusal) = again else { Issue.record("a second task took the id: \(again)"); return }
            #expect(refusal.code == "task_exists")
        }
    }
}
