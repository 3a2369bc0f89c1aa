import Digests
import Glibc
import Reactor
import TestSupport
import Testing
@testable import TransferEngine
import TransferVocabulary

/// Opens a download's file only when asked, and counts how often it was.
final class FilePreparer: TransferPreparer, @unchecked Sendable {
    let calls = Locked(0)
    /// The descriptor it opened, the caller's to close once the outcome is delivered.
    let opened = Locked<Int32>(-1)
    private let path: String
    private let resume: ResumeRequest?
    private let failure: TransferFailure?

    init(path: String, resume: ResumeRequest? = nil, failure: TransferFailure? = nil) {
        self.path = path
        self.resume = resume
        self.failure = failure
    }

    func prepare() throws(TransferFailure) -> TransferFiles {
        calls.withLock { $0 += 1 }
        if let failure { throw failure }
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        opened.withLock { $0 = fd }
        return TransferFiles(output: .file(fd: fd, offset: resume?.offset ?? 0), resume: resume)
    }
}

/// Opens nothing until released: a file system that takes its time.
final class BlockingPreparer: TransferPreparer, @unchecked Sendable {
    let entered = ThreadSignal()
    let release = ThreadSignal()

    func prepare() throws(TransferFailure) -> TransferFiles {
        entered.post()
        release.wait()
        return TransferFiles(output: .discard)
    }
}

/// A transfer's files are opened as it is admitted, never while it waits for a slot.
@Suite(.serialized)
struct TransferPreparerTests {
    static var engine: TransferEngine { TransferEngineTests.engine }

    /// Returns once the session's loop has handled everything submitted to it before.
    static func drain(_ session: String) {
        let done = ThreadSignal()
        engine.cookies(of: session) { _ in done.post() }
        _ = done.wait(seconds: 5)
    }

    static func oneAtATime(_ session: String) {
        engine.configure(session: session, settings: .limits(maxConcurrentTasks: 1, maxConnectionsPerHost: 6),
                         cookieStorage: nil, cookies: nil)
    }

    @Test func aQueuedTransferIsPreparedOnlyWhenAdmitted() throws {
        let origin = try TestOrigin()
        let session = "prepared-on-admission"
        Self.oneAtATime(session)
        let blocker = RecordingObserver()
        let running = Self.engine.submit(TransferSpec(label: "b", session: session, url: origin.url("/stall")), observer: blocker)
        let (fd, path) = temporaryFile()
        close(fd)
        defer { unlink(path) }
        let preparer = FilePreparer(path: path)
        var spec = TransferSpec(label: "q", session: session, url: origin.url("/bytes/300000"))
        spec.preparer = preparer
        spec.digests = [.sha256]
        let queued = RecordingObserver()
        let handle = Self.engine.submit(spec, observer: queued)
        Self.drain(session)
        #expect(handle.phase == .waiting)
        #expect(preparer.calls.withLock { $0 } == 0)

        running.stop(.cancelled)
        _ = blocker.wait()
        let outcome = try #require(queued.wait())
        close(preparer.opened.withLock { $0 })
        #expect(preparer.calls.withLock { $0 } == 1)
        #expect(outcome.started)
        #expect(outcome.failure == nil)
        #expect(readFile(path) == TestOrigin.content(300_000))
        #expect(outcome.digests?[.sha256] == TestOrigin.sha256(TestOrigin.content(300_000)))
        origin.server.shutdown()
    }

    @Test func aTransferStoppedWhileQueuedIsNeverPrepared() throws {
        let origin = try TestOrigin()
        let session = "stopped-while-queued"
        Self.oneAtATime(session)
        let blocker = RecordingObserver()
        let running = Self.engine.submit(TransferSpec(label: "b", session: session, url: origin.url("/stall")), observer: blocker)
        let preparer = FilePreparer(path: "/nonexistent/never-opened")
        var spec = TransferSpec(label: "q", session: session, url: origin.url("/bytes/10"))
        spec.preparer = preparer
        let queued = RecordingObserver()
        let handle = Self.engine.submit(spec, observer: queued)
        Self.drain(session)
        handle.stop(.cancelled)
        let outcome = try #require(queued.wait())
        #expect(outcome.stopReason == .cancelled)
        #expect(!outcome.started)
        #expect(queued.events.withLock { $0 } == ["completed"])
        running.stop(.cancelled)
        _ = blocker.wait()
        #expect(preparer.calls.withLock { $0 } == 0)
        origin.server.shutdown()
    }

    @Test func aSlowPreparationDoesNotHoldUpTheLoop() throws {
        let origin = try TestOrigin()
        let session = "slow-preparation"
        Self.engine.configure(session: session, settings: .limits(maxConcurrentTasks: 2, maxConnectionsPerHost: 6),
                              cookieStorage: nil, cookies: nil)
        let slow = BlockingPreparer()
        var spec = TransferSpec(label: "s", session: session, url: origin.url("/bytes/10"))
        spec.preparer = slow
        let blocked = RecordingObserver()
        Self.engine.submit(spec, observer: blocked)
        #expect(slow.entered.wait(seconds: 5))
        // The loop that admitted it runs another transfer of the session meanwhile.
        let other = RecordingObserver()
        Self.engine.submit(TransferSpec(label: "o", session: session, url: origin.url("/bytes/20")), observer: other)
        #expect(other.wait()?.failure == nil)
        #expect(blocked.events.withLock { $0 }.isEmpty)
        slow.release.post()
        let outcome = try #require(blocked.wait())
        #expect(outcome.started && outcome.failure == nil)
        origin.server.shutdown()
    }

    @Test func aTransferStoppedWhileBeingPreparedNeverStartsAndFreesItsSlot() throws {
        let origin = try TestOrigin()
        let session = "stopped-while-prepared"
        Self.oneAtATime(session)
        let slow = BlockingPreparer()
        var spec = TransferSpec(label: "s", session: session, url: origin.url("/bytes/10"))
        spec.preparer = slow
        let stopped = RecordingObserver()
        let handle = Self.engine.submit(spec, observer: stopped)
        let next = RecordingObserver()
        Self.engine.submit(TransferSpec(label: "n", session: session, url: origin.url("/bytes/10")), observer: next)
        #expect(slow.entered.wait(seconds: 5))
        handle.stop(.suspended)
        Self.drain(session)
        #expect(stopped.events.withLock { $0 }.isEmpty, "its outcome waits for its files")
        slow.release.post()
        let outcome = try #require(stopped.wait())
        #expect(outcome.stopReason == .suspended)
        #expect(!outcome.started)
        #expect(stopped.events.withLock { $0 } == ["completed"])
        #expect(next.wait()?.failure == nil)
        #expect(origin.hitCount("/bytes") == 1)
        origin.server.shutdown()
    }

    @Test func aFailedPreparationEndsTheTransferAndFreesItsSlot() throws {
        let origin = try TestOrigin()
        let session = "refused-at-admission"
        Self.oneAtATime(session)
        let failing = FilePreparer(path: "", failure: TransferFailure(.fileDoesNotExist, "gone"))
        var spec = TransferSpec(label: "f", session: session, url: origin.url("/bytes/10"))
        spec.preparer = failing
        let refused = RecordingObserver()
        Self.engine.submit(spec, observer: refused)
        let next = RecordingObserver()
        Self.engine.submit(TransferSpec(label: "n", session: session, url: origin.url("/bytes/10")), observer: next)

        let outcome = try #require(refused.wait())
        #expect(outcome.failure == TransferFailure(.fileDoesNotExist, "gone"))
        #expect(!outcome.started)
        #expect(refused.events.withLock { $0 } == ["completed"])
        #expect(next.wait()?.failure == nil)
        #expect(origin.hitCount("/bytes") == 1)
        origin.server.shutdown()
    }

    @Test func aPreparedOutputContinuesFromItsOffset() throws {
        let origin = try TestOrigin()
        let (fd, path) = temporaryFile()
        defer { unlink(path) }
        let content = TestOrigin.content(300_000)
        _ = content.withUnsafeBytes { write(fd, $0.baseAddress, 100_000) }
        close(fd)
        var spec = TransferSpec(label: "r", session: "prepared-resume", url: origin.url("/bytes/300000"))
        let preparer = FilePreparer(path: path, resume: ResumeRequest(offset: 100_000, validator: "\"v1-300000\""))
        spec.preparer = preparer
        spec.digests = [.sha256]
        let observer = RecordingObserver()
        Self.engine.submit(spec, observer: observer)
        let outcome = try #require(observer.wait())
        close(preparer.opened.withLock { $0 })
        #expect(outcome.failure == nil)
        #expect(outcome.resumedAtOffset == 100_000)
        #expect(outcome.bytesReceived == 300_000)
        #expect(readFile(path) == content)
        #expect(outcome.digests?[.sha256] == TestOrigin.sha256(content))
        origin.server.shutdown()
    }
}
