import TestSupport
import Testing
@testable import TransferCore
@testable import TransferModel

/// A restart: the first coordinator stops with a download caught mid-way, and a second one on the
/// same store and data directory recovers, treating the task as its session's mode says.
@Suite(.serialized)
struct TaskCoordinatorRestartTests {
    static let size = 200_000

    /// Runs a download of a session of `mode` until half of it is on disk, stops that process and
    /// starts another; returns the task as the second process completes it, and the origin's ranges.
    func restartMidDownload(_ mode: SessionMode, key: String) throws -> (TaskRecord, ranges: [String]) {
        let origin = try TestOrigin()
        defer { origin.server.shutdown() }
        let first = try CoreHarness()
        let session = try first.putSession("s", mode: mode)
        let id = try first.downloadHeldHalfway(Self.size, from: origin, key: key, in: session)
        first.stop()
        // What the stopped transfer got is stored before the next process reads the store.
        try CoreHarness.poll("the stopped attempt to be stored") {
            (try? first.store.loadTask(session: "s", id: id)?.progress.bytesReceived).map { $0 >= Int64(Self.size / 2) } ?? false
        }

        let second = try CoreHarness(store: first.store, directory: first.directory)
        defer { second.tearDown() }
        let task = try second.completed(id, in: try second.coordinator.session("s"))
        return (task, origin.ranges.withLock { $0 })
    }

    @Test func backgroundTaskContinuesWhereItStopped() throws {
        let (task, ranges) = try restartMidDownload(.background, key: "background")
        #expect(task.error == nil)
        #expect(task.result?.sha256 == TestOrigin.sha256(TestOrigin.content(Self.size)))
        #expect(ranges == ["bytes=\(Self.size / 2)-"])
    }

    @Test func defaultTaskCompletesInterruptedWithResumeData() throws {
        let (task, ranges) = try restartMidDownload(.default, key: "default")
        #expect(task.error?.code == .interrupted)
        #expect(task.error?.resumeData != nil)
        #expect(ranges.isEmpty)
    }
}
