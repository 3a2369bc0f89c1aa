import Glibc
import Reactor
import TestSupport
import Testing
@testable import TransferEngine

/// Cluster mode's write fence in the engine, against a real origin and real files: past the
/// deadline a transfer writes nothing more to its file — not the bytes arriving for it — opens no
/// output, and ends `.fenced`.
@Suite(.serialized)
struct FencedWritesTests {
    static let fence = WriteFence()
    static let engine: TransferEngine = {
        TransferEngine.globalInit()
        return TransferEngine(loopCount: 1, policy: NetworkPolicy(parsing: "default")!, fence: fence)
    }()

    /// Renewed "just now": writes allowed for an hour.
    static func renewed() { fence.allow(until: LeaseClock.seconds() + 3600) }

    /// A download caught half way (`/stall-once`), its file holding the first half.
    static func halfWay(_ key: String, origin: TestOrigin, n: Int) -> (RecordingObserver, FilePreparer, String) {
        let (fd, path) = temporaryFile()
        close(fd)
        let preparer = FilePreparer(path: path)
        var spec = TransferSpec(label: key, session: key, url: origin.url("/stall-once/\(n)?key=\(key)"))
        spec.preparer = preparer
        let observer = RecordingObserver()
        let handle = engine.submit(spec, observer: observer)
        let deadline = MonotonicClock.after(seconds: 10)
        while handle.bytesReceived < Int64(n / 2) && MonotonicClock.now() < deadline { usleep(1000) }
        #expect(handle.bytesReceived == Int64(n / 2))
        return (observer, preparer, path)
    }

    @Test func pastTheDeadlineTheBytesStillArrivingAreNotWritten() throws {
        let origin = try TestOrigin()
        Self.renewed()
        let n = 200_000
        let (observer, preparer, path) = Self.halfWay("fence-deadline", origin: origin, n: n)
        defer { unlink(path) }
        Self.fence.allow(until: 0)
        origin.release()
        let outcome = try #require(observer.wait())
        close(preparer.opened.withLock { $0 })
        #expect(outcome.stopReason == .fenced)
        #expect(readFile(path) == Array(TestOrigin.content(n)[..<(n / 2)]))
        origin.server.shutdown()
    }

    @Test func pastTheDeadlineNoOutputIsEvenOpened() throws {
        let origin = try TestOrigin()
        Self.fence.allow(until: 0)
        let (fd, path) = temporaryFile()
        defer { unlink(path) }
        let earlier = TestOrigin.content(1000)
        _ = earlier.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let preparer = FilePreparer(path: path)
        var spec = TransferSpec(label: "closed", session: "fence-closed", url: origin.url("/bytes/5000"))
        spec.preparer = preparer
        let observer = RecordingObserver()
        Self.engine.submit(spec, observer: observer)
        let outcome = try #require(observer.wait())
        #expect(outcome.stopReason == .fenced)
        #expect(!outcome.started)
        #expect(preparer.calls.withLock { $0 } == 0)
        #expect(origin.hitCount("/bytes") == 0)
        #expect(readFile(path) == earlier)
        origin.server.shutdown()
    }
}
