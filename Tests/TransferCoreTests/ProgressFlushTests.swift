import Testing
import TestSupport
@testable import TransferCore

/// The periodic progress flush of durable sessions.
struct ProgressFlushTests {
    /// A transfer waiting in the admission queue has nothing new to store: only the running one's
    /// progress is flushed.
    @Test func leavesTheTransfersWaitingInTheQueue() throws {
        let origin = try TestOrigin()
        let core = try CoreHarness()
        defer { core.tearDown(); origin.server.shutdown() }
        let session = try core.putSession("s", mode: .background, configuration: #"{"max_concurrent_tasks": 1}"#)
        let running = try core.downloadHeldHalfway(1 << 20, from: origin, key: "flush", in: session)
        let queued = try core.download(origin.url("/bytes/1024"), in: session)
        try CoreHarness.poll("the second task to be queued in the engine") {
            session.locked { session.tasks[queued]?.transfer != nil }
        }

        #expect(core.coordinator.journal.progressUpdates().map(\.id) == [running])

        origin.release()
        #expect(try core.completed(queued, in: session).error == nil)
    }
}
