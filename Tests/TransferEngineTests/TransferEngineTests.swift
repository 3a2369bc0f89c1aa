import Digests
import Glibc
import Reactor
import TestSupport
import Testing
@testable import TransferEngine
import TransferVocabulary

/// Opens a fresh temporary file for a download and returns its descriptor and path.
func temporaryFile() -> (Int32, String) {
    var template = Array("/tmp/transferd-engine-XXXXXX".utf8CString)
    let fd = mkstemp(&template)
    return (fd, String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
}

func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    defer { close(fd) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        out += buffer[0..<n]
    }
    return out
}

@Suite(.serialized)
struct TransferEngineTests {
    static let engine: TransferEngine = {
        TransferEngine.globalInit()
        return TransferEngine(loopCount: 2, policy: NetworkPolicy(parsing: "default")!)
    }()

    @Test func downloadsToAFileWithItsSHA256() throws {
        let origin = try TestOrigin()
        let (fd, path) = temporaryFile()
        defer { close(fd); unlink(path) }
        var spec = TransferSpec(label: "t", session: "s1", url: origin.url("/bytes/300000"))
        spec.output = .file(fd: fd, offset: 0)
        spec.digests = [.sha256]
        let observer = RecordingObserver()
        Self.engine.submit(spec, observer: observer)
        let outcome = try #require(observer.wait())
        #expect(outcome.failure == nil)
        #expect(outcome.response?.status == 200)
        #expect(outcome.bytesReceived == 300_000)
        #expect(readFile(path) == TestOrigin.content(300_000))
        #expect(outcome.digests?[.sha256] == TestOrigin.sha256(TestOrigin.content(300_000)))
        #expect(observer.events.withLock { $0 } == ["started", "response 200", "completed"])
        origin.server.shutdown()
    }

    @Test func followsRedirectsAndReportsThem() throws {
        let origin = try TestOrigin()
        var spec = TransferSpec(label: "t", session: "s1", url: origin.url("/redirect/3"))
        spec.output = .memory
        let observer = RecordingObserver()
        Self.engine.submit(spec, observer: observer)
        let outcome = try #require(observer.wait())
        #expect(outcome.failure == nil)
        #expect(outcome.body == TestOrigin.content(100))
        #expect(outcome.metrics.redirectCount == 3)
        #expect(observer.events.withLock { $0 }.filter { $0.hasPrefix("redirect") }.count == 3)
        #expect(outcome.response?.url.hasSuffix("/bytes/100") == true)
        origin.server.shutdown()
    }

    @Test func tooManyRedirects() throws {
        let origin = try TestOrigin()
        var spec = TransferSpec(label: "t", session: "s1", url: origin.url("/redirect/5"))
        spec.maxRedirects = 2
        let observer = RecordingObserver()
        Self.engine.submit(spec, observer: observer)
        #expect(try #require(observer.wait()).failure?.code == .tooManyRedirects)
        origin.server.shutdown()
    }

    @Test(arguments: ["file:///etc/passwd", "gopher://127.0.0.1/x", "dict://127.0.0.1/x"])
    func redirectToAnotherSchemeIsRefused(target: String) throws {
        let origin = try TestOrigin()
        let spec = TransferSpec(label: "t", session: "s1", url: origin.url("/redirect-to?url=\(target)"))
        let observer = RecordingObserver()
        Self.engine.submit(spec, observer: observer)
        #expect(try #require(observer.wait()).failure?.code == .unsupportedURL)
        origin.server.shutdown()
    }

    @Test func publicOnlyPolicyRefusesLoopbackBeforeConnecting() throws {
        let origin = try TestOrigin()
        let engine = TransferEngine(loopCount: 1, policy: NetworkPolicy(parsing: "public-only")!)
        let observer = RecordingObserver()
        engine.submit(TransferSpec(label: "t", session: "p", url: origin.url("/bytes/10")), observer: observer)
        let outcome = try #require(observer.wait())
        #expect(outcome.failure?.code == .blockedByPolicy)
        #expect(origin.hitCount("/bytes") == 0)
        engine.shutdown()
        origin.server.shutdown()
    }

    @Test func resumesWithRangeAndIfRange() throws {
        let origin = try TestOrigin()
        let (fd, path) = temporaryFile()
        defer { close(fd); unlink(path) }
        let full = TestOrigin.content(5000)
        _ = full[0..<2000].withUnsafeBytes { write(fd, $0.baseAddress, 2000) }
        var spec = TransferSpec(label: "t", session: "s1", url: origin.url("/bytes/5000"))
        spec.output = .file(fd: fd, offset: 2000)
        spec.resume = ResumeRequest(offset: 2000, validator: "\"v1-5000\"")
        spec.digests = [.sha256]
        let observer = RecordingObserver()
        Self.engine.submit(spec, observer: observer)
        let outcome = try #require(observer.wait())
        #expect(outcome.failure == nil)
        #expect(outcome.resumedAtOffset == 2000)
        #expect(outcome.bytesReceived == 5000)
        #expect(readFile(path) == full)
        // The digest covers the whole file, the part written before the resume included.
        #expect(outcome.digests?[.sha256] == TestOrigin.sha256(full))
        origin.server.shutdown()
    }

    @Test(arguments: ["?ignore_range=1", "?etag=2"])
    func restartsFromZeroWhenTheRangeIsNotHonoured(query: String) throws {
        let origin = try TestOrigin()
        let (fd, path) = temporaryFile()
        defer { close(fd); unlink(path) }
        let garbage = [UInt8](repeating: 0xAA, count: 3000)
        _ = garbage.withUnsafeBytes { write(fd, $0.baseAddress, 3000) }
        var spec = TransferSpec(label: "t", session: "s1", url: origin.url("/bytes/5000\(query)"))
        spec.output = .file(fd: fd, offset: 3000)
        spec.resume = ResumeRequest(offset: 3000, validator: "\"v1-5000\"")
        spec.digests = [.sha256]
        let observer = RecordingObserver()
        Self.engine.submit(spec, observer: observer)
        let outcome = try #require(observer.wait())
        #expect(outcome.failure == nil)
        #expect(outcome.restartedFromZero)
        #expect(readFile(path) == TestOrigin.content(5000))
        origin.server.shutdown()
    }

    @Test func bodyLargerThanTheCapFails() throws {
        let origin = try TestOrigin()
        var spec = TransferSpec(label: "t", session: "s1", url: origin.url("/bytes/100000"))
        spec.output = .memory
        spec.maxBodyBytes = 1000
        let observer = RecordingObserver()
        Self.engine.submit(spec, observer: observer)
        #expect(try #require(observer.wait()).failure?.code == .dataLengthExceedsMaximum)
        origin.server.shutdown()
    }

    @Test func perHostLimitHolds() throws {
        let origin = try TestOrigin()
        let session = "limited"
        Self.engine.configure(session: session, settings: .limits(maxConcurrentTasks: 10, maxConnectionsPerHost: 2),
                              cookieStorage: nil, cookies: nil)
        let observers = (0..<6).map { _ in RecordingObserver() }
        for (i, o) in observers.enumerated() {
            Self.engine.submit(TransferSpec(label: "t\(i)", session: session, url: origin.url("/slow/150")), observer: o)
        }
        for o in observers { #expect(o.wait()?.failure == nil) }
        #expect(origin.concurrent.withLock { $0.max } == 2)
        origin.server.shutdown()
    }

    /// The connections of a burst outlast a lull of one transfer at a time: the next burst to the
    /// same host reuses every one (curl's own rule, four kept per transfer added, would have let
    /// the lone transfers close all but four).
    @Test func aBurstsConnectionsOutlastALull() throws {
        let origin = try TestOrigin()
        let session = "keeps-connections"
        func burst(_ count: Int, _ path: String) -> [TransferOutcome] {
            let observers = (0..<count).map { _ in RecordingObserver() }
            for (i, o) in observers.enumerated() {
                Self.engine.submit(TransferSpec(label: "t\(i)", session: session, url: origin.url(path)), observer: o)
            }
            return observers.compactMap { $0.wait() }
        }
        #expect(burst(6, "/slow/200").count == 6)
        #expect(origin.concurrent.withLock { $0.max } == 6)
        for _ in 0..<4 { #expect(burst(1, "/bytes/10").first?.metrics.reusedConnection == true) }
        let again = burst(6, "/slow/200")
        #expect(again.count == 6)
        #expect(again.filter { !$0.metrics.reusedConnection }.count == 0)
        origin.server.shutdown()
    }

    @Test func priorityOrdersQueuedWork() throws {
        let origin = try TestOrigin()
        let session = "prio"
        Self.engine.configure(session: session, settings: .limits(maxConcurrentTasks: 1, maxConnectionsPerHost: 6),
                              cookieStorage: nil, cookies: nil)
        let order = Locked<[String]>([])
        final class Tagging: TransferObserver, @unchecked Sendable {
            let tag: String, order: Locked<[String]>, inner = RecordingObserver()
            init(_ tag: String, _ order: Locked<[String]>) { self.tag = tag; self.order = order }
            func transferStarted(_ h: TransferHandle) { order.withLock { $0.append(tag) } }
            func transferReceivedResponse(_ h: TransferHandle, _ r: ResponseHead, resumedAtOffset: Int64?) {}
            func transferRedirected(_ h: TransferHandle, from: String, to: String, status: Int) {}
            func transferCompleted(_ h: TransferHandle, _ o: TransferOutcome) { inner.transferCompleted(h, o) }
        }
        let first = Tagging("first", order)
        var blocker = TransferSpec(label: "b", session: session, url: origin.url("/slow/200"))
        blocker.sequence = 0
        Self.engine.submit(blocker, observer: first)
        usleep(50_000)
        let tags = [("low", 0.1), ("high", 0.9), ("mid", 0.5)]
        let observers = tags.enumerated().map { i, t -> Tagging in
            var spec = TransferSpec(label: t.0, session: session, url: origin.url("/slow/10"))
            spec.priority = t.1
            spec.sequence = UInt64(i + 1)
            let o = Tagging(t.0, order)
            Self.engine.submit(spec, observer: o)
            return o
        }
        for o in [first] + observers { _ = o.inner.wait() }
        #expect(order.withLock { $0 } == ["first", "high", "mid", "low"])
        origin.server.shutdown()
    }

    @Test func stoppingAQueuedOrRunningTransfer() throws {
        let origin = try TestOrigin()
        let observer = RecordingObserver()
        let handle = Self.engine.submit(TransferSpec(label: "t", session: "s1", url: origin.url("/slow/3000")), observer: observer)
        usleep(200_000)
        handle.stop(.cancelled)
        let outcome = try #require(observer.wait(seconds: 2))
        #expect(outcome.failure?.code == .cancelled)
        #expect(outcome.stopReason == .cancelled)
        origin.server.shutdown()
    }

    @Test func flushMakesTheNextRequestUseANewConnection() throws {
        let origin = try TestOrigin()
        func fetch() throws -> TransferOutcome {
            let observer = RecordingObserver()
            Self.engine.submit(TransferSpec(label: "t", session: "flushing", url: origin.url("/bytes/10")), observer: observer)
            return try #require(observer.wait())
        }
        _ = try fetch()
        #expect(try fetch().metrics.reusedConnection)
        let flushed = ThreadSignal()
        Self.engine.flushSession("flushing") { flushed.post() }
        #expect(flushed.wait(seconds: 5))
        #expect(try fetch().metrics.reusedConnection == false)
        #expect(try fetch().metrics.reusedConnection)
        origin.server.shutdown()
    }

    @Test(arguments: ["PUT", "POST", "PATCH"])
    func uploadsSegmentsFromMemoryAndFile(method: String) throws {
        let origin = try TestOrigin()
        let (fd, path) = temporaryFile()
        defer { unlink(path) }
        let fileBytes = TestOrigin.content(3_000_000)
        _ = fileBytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let head = Array("--boundary\r\n".utf8), tail = Array("\r\n--boundary--\r\n".utf8)
        var spec = TransferSpec(label: "u", session: "s1", url: origin.url("/upload"))
        spec.method = method
        // The middle of the file only: offsets must be honoured.
        spec.body = .segments([.bytes(head), .file(fd: fd, offset: 1000, length: 2_000_000), .bytes(tail)])
        spec.output = .memory
        let observer = RecordingObserver()
        let handle = Self.engine.submit(spec, observer: observer)
        let outcome = try #require(observer.wait())
        #expect(outcome.failure == nil)
        let expected = head + Array(fileBytes[1000..<2_001_000]) + tail
        #expect(String(decoding: outcome.body ?? [], as: UTF8.self) == "\(method) \(expected.count) \(TestOrigin.sha256(expected))")
        #expect(outcome.bytesSent == Int64(expected.count))
        #expect(handle.bytesExpectedToSend == Int64(expected.count))
        origin.server.shutdown()
    }

    @Test func aRedirectThatKeepsThePOSTRewindsTheBody() throws {
        let origin = try TestOrigin()
        let (fd, path) = temporaryFile()
        defer { unlink(path) }
        let fileBytes = TestOrigin.content(500_000)
        _ = fileBytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var spec = TransferSpec(label: "u", session: "s1", url: origin.url("/redirect307"))
        spec.method = "POST"
        spec.body = .segments([.file(fd: fd, offset: 0, length: 500_000)])
        spec.output = .memory
        let observer = RecordingObserver()
        Self.engine.submit(spec, observer: observer)
        let outcome = try #require(observer.wait())
        #expect(String(decoding: outcome.body ?? [], as: UTF8.self) == "POST 500000 \(TestOrigin.sha256(fileBytes))")
        origin.server.shutdown()
    }

    @Test func aFileShorterThanPromisedFailsTheUpload() throws {
        let origin = try TestOrigin()
        let (fd, path) = temporaryFile()
        defer { unlink(path) }
        _ = [UInt8](repeating: 1, count: 100).withUnsafeBytes { write(fd, $0.baseAddress, 100) }
        var spec = TransferSpec(label: "u", session: "s1", url: origin.url("/upload"))
        spec.method = "PUT"
        spec.body = .segments([.file(fd: fd, offset: 0, length: 1000)])
        let observer = RecordingObserver()
        Self.engine.submit(spec, observer: observer)
        #expect(try #require(observer.wait()).failure?.code == .cannotOpenFile)
        origin.server.shutdown()
    }

    @Test func aStallInTheMiddleOfTheBodyTimesOutOnTime() throws {
        let origin = try TestOrigin()
        var spec = TransferSpec(label: "t", session: "s1", url: origin.url("/stall"))
        spec.idleTimeout = 1
        spec.output = .memory
        let observer = RecordingObserver()
        let started = MonotonicClock.now()
        Self.engine.submit(spec, observer: observer)
        let outcome = try #require(observer.wait(seconds: 5))
        let elapsed = Double(MonotonicClock.now() - started) / 1e9
        #expect(outcome.failure?.code == .timedOut)
        #expect(outcome.bytesReceived == 1000)
        #expect(elapsed >= 0.9 && elapsed < 2, "took \(elapsed) s")
        origin.server.shutdown()
    }

    @Test func connectionRefusedIsCannotConnect() throws {
        let observer = RecordingObserver()
        Self.engine.submit(TransferSpec(label: "t", session: "s1", url: "http://127.0.0.1:1/x"), observer: observer)
        #expect(try #require(observer.wait()).failure?.code == .cannotConnectToHost)
    }
}

extension SessionSettings {
    static func limits(maxConcurrentTasks: Int, maxConnectionsPerHost: Int) -> SessionSettings {
        var settings = SessionSettings()
        settings.maxConcurrentTasks = maxConcurrentTasks
        settings.maxConnectionsPerHost = maxConnectionsPerHost
        return settings
    }
}
