import Dispatch
import TestSupport
import Testing
@testable import TransferCore
@testable import TransferModel

/// Cluster mode's takeover: a replica stops mid-download without a word (its lease lapses), and
/// another replica on the same store and data directory adopts the session, continuing the task
/// from its partial file. The claiming round and requests' look-ups may adopt it at once: the
/// session must come into memory once, and its download restart once.
@Suite(.serialized)
struct TaskCoordinatorTakeoverTests {
    static let size = 200_000

    @Test func concurrentAdoptionsBringTheSessionInOnceAndContinueItsDownloadOnce() throws {
        let origin = try TestOrigin()
        defer { origin.server.shutdown() }
        let first = try CoreHarness()
        let session = try first.putSession("s", mode: .background)
        let id = try first.downloadHeldHalfway(Self.size, from: origin, key: "takeover", in: session)
        first.stop()
        try CoreHarness.poll("the stopped attempt to be stored") {
            (try? first.store.loadTask(session: "s", id: id)?.progress.bytesReceived).map { $0 >= Int64(Self.size / 2) } ?? false
        }

        let second = try CoreHarness(store: first.store, directory: first.directory, recovering: false)
        defer { second.tearDown() }
        #expect(!second.coordinator.holds("s"), "a replica holds only what it took over")
        DispatchQueue.concurrentPerform(iterations: 4) { _ in _ = try? second.coordinator.adopt(["s"]) }
        let adopted = try second.coordinator.session("s")
        #expect(second.coordinator.registry.all.count == 1)
        let task = try second.completed(id, in: adopted)
        #expect(task.error == nil)
        #expect(task.result?.sha256 == TestOrigin.sha256(TestOrigin.content(Self.size)))
        #expect(origin.ranges.withLock { $0 } == ["bytes=\(Self.size / 2)-"], "continued once, from the partial file")
    }
}
