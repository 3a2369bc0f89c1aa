import CCurl
import Digests
import CLinux
import Glibc
import Reactor
import Synchronization
import TransferVocabulary

/// One attempt of a transfer while the engine has it, confined to its loop's thread (other threads
/// reach it only through `EventLoop.execute`). Owns the easy handle while running and the output
/// descriptor until the outcome is delivered; where it is in its life is `lifecycle`, changed only
/// through it (`MultiLoop.tell`, or `note` inside curl's callbacks).
final class Transfer: @unchecked Sendable {
    let handle: TransferHandle
    let observer: TransferObserver
    let policy: NetworkPolicy
    /// The session's queue: its settings, cookie jar and bandwidth bucket.
    let session: SessionQueue
    let counters: LoopCounters
    let tally: ByteTally?
    /// Body bytes not handed to the tally yet (`Transfer+Counting`).
    var untallied: (received: Int, sent: Int) = (0, 0)
    var spec: TransferSpec { handle.spec }
    var easy: OpaquePointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var lifecycle = TransferLifecycle()
    /// Admission order; changes when a client re-prioritizes the task while it waits.
    var priority: Double
    /// Set while running when the session or the engine limits bandwidth.
    var pacer: Pacer?
    /// The credential offered to the request's host, if any.
    var credential: Credential?
    /// This request: the task's URL and method, or a redirect's that curl was not left to follow
    /// (`Transfer+Redirect.swift`), with the redirects followed before it.
    var requestURL: String
    var requestMethod: String
    var sendsBody = true
    var redirectsBefore = 0
    /// The easy handle has curl's cookie engine on (the pool keeps such handles apart).
    var usesCookieEngine = false
    /// The spec's body, output and resume until admission, then what its preparer opened.
    private(set) var files: TransferFiles

    // Output (`Transfer+Output.swift`).
    var outputFD: Int32 = -1
    /// Bytes of the file, counting those still in a direct output's chunk.
    var writeOffset: Int64 = 0
    /// Where the writes not yet handed to writeback begin (`startWriteback`).
    var writebackOffset: Int64 = 0
    /// A large download's O_DIRECT writer, from its final response head on.
    var direct: DirectOutput?
    private var memoryBody: [UInt8] = []
    private var received: Int64 = 0
    /// Hashes the output file a step behind the writes (`spec.digests`), from admission on.
    private(set) var hasher: FileHasher?

    // Request body (`.segments`): where the next read starts.
    private var bodySegment = 0
    private var bodySegmentOffset: Int64 = 0
    var bodySent: Int64 = 0

    /// The requests curl sends for this attempt, and whether it may send one again.
    var sends: RequestSends

    // Response tracking.
    var collector = ResponseCollector()
    private(set) var finalResponse: ResponseHead?
    private(set) var resumedAtOffset: Int64?
    private(set) var restartedFromZero = false
    /// What the final response declared of the file (`spec.verifyOriginDigests`).
    private(set) var declaredDigests: [DeclaredDigest] = []

    /// When a byte last moved (monotonic ns), for the idle timeout.
    var lastActivity: UInt64 = MonotonicClock.now()
    /// When it was admitted (monotonic ns), and whether its output was reported worth keeping.
    private var admittedAt: UInt64 = 0
    private var partialWorthReported = false

    // Why curl's own error code does not tell the whole story.
    var blockedAddress: String?
    /// The server asked for a client certificate in a TLS handshake of this transfer.
    var serverRequestedClientCertificate = false
    var writeFailure: TransferFailure?
    private var readFailure: TransferFailure?

    init(handle: TransferHandle, observer: TransferObserver, policy: NetworkPolicy, session: SessionQueue, counters: LoopCounters) {
        self.handle = handle
        self.observer = observer
        self.policy = policy
        self.session = session
        self.counters = counters
        tally = handle.spec.tally
        priority = handle.spec.priority
        requestURL = handle.spec.url
        requestMethod = handle.spec.method
        files = TransferFiles(body: handle.spec.body, output: handle.spec.output, resume: handle.spec.resume)
        sends = RequestSends(limit: handle.spec.resendLimit)
    }

    /// The files its preparer opened: held from now on, to go back with its outcome whether or not
    /// it starts (no output is set up for a transfer stopped meanwhile).
    func hold(_ prepared: TransferFiles) { files = prepared }

    /// Launched: sets up the output and its hasher from its files (its preparer's, or the spec's).
    /// Nothing of this exists while the transfer waits.
    func adopt() {
        lastActivity = MonotonicClock.now()
        admittedAt = lastActivity
        if case .file(let fd, let offset) = files.output {
            outputFD = fd
            writeOffset = offset
            writebackOffset = offset
            handle.setReceived(offset)
            if !spec.digests.isEmpty {
                hasher = makeHasher(fd: fd, algorithms: spec.digests, continuing: files.resume == nil ? nil : files.digestCheckpoint)
            }
        }
        let toSend = files.body.totalLength
        if toSend > 0 { handle.setExpectedToSend(toSend) }
    }

    /// Tells the observer, once, that the output file is worth a name (`PartialWorth`): checked
    /// by the loop's sweep rather than per write, so the hot path pays nothing and a download
    /// whose origin went quiet after its first bytes is still named a second on.
    func reportPartialWorthIfDue(now: UInt64) {
        guard spec.reportsPartialWorth, !partialWorthReported, lifecycle.isRunning, outputFD >= 0 else { return }
        let announced = finalResponse.map { head in head.expectedContentLength.map { $0 + (resumedAtOffset ?? 0) } ?? .max }
        guard PartialWorth.isWorthKeeping(written: writeOffset, running: now &- admittedAt, announced: announced) else { return }
        partialWorthReported = true
        observer.transferPartialWorthKeeping(handle)
    }

    // MARK: curl callbacks (loop thread, inside curl)

    /// CURLOPT_WRITEFUNCTION: body bytes of the final response, straight to the file.
    func write(_ data: UnsafeRawBufferPointer) -> Int {
        // Before the pacer, which counts the piece as moved: a paused piece comes back.
        if let direct, !hasRoom(in: direct, for: data.count) { return Int(transferd_writefunc_pause()) }
        if let pacer {
            guard pacer.mayMove(self) else { return Int(transferd_writefunc_pause()) }
            pacer.moved(data.count, by: self)
        }
        let now = MonotonicClock.now()
        lastActivity = now
        if let max = spec.maxBodyBytes, (resumedAtOffset ?? 0) + received + Int64(data.count) > max {
            writeFailure = TransferFailure(.dataLengthExceedsMaximum, "the response body is larger than \(max) bytes")
            return 0
        }
        switch files.output {
        case .file:
            guard !isFenced(), writeToFile(data, at: now) else { return 0 }
        case .memory:
            memoryBody.append(contentsOf: data)
            handle.setReceived(Int64(memoryBody.count))
        case .discard:
            handle.setReceived(received + Int64(data.count))
        }
        received += Int64(data.count)
        counters.received.add(Int64(data.count), ordering: .relaxed)
        tallyReceived(data.count)
        return data.count
    }

    /// CURLOPT_READFUNCTION: the next piece of a streamed request body, file parts read straight
    /// into curl's buffer.
    func read(into whole: UnsafeMutableRawBufferPointer) -> Int {
        guard case .segments(let segments) = files.body else { return 0 }
        var buffer = whole
        if let pacer {
            guard pacer.mayMove(self) else { return Int(transferd_readfunc_pause()) }
            buffer = UnsafeMutableRawBufferPointer(rebasing: whole.prefix(pacer.pieceSize(for: session)))
        }
        lastActivity = MonotonicClock.now()
        var filled = 0
        while filled < buffer.count && bodySegment < segments.count {
            let segment = segments[bodySegment]
            let remaining = Int(min(Int64(buffer.count - filled), segment.length - bodySegmentOffset))
            if remaining <= 0 {
                bodySegment += 1
                bodySegmentOffset = 0
                continue
            }
            switch segment {
            case .bytes(let bytes):
                bytes.withUnsafeBytes { src in
                    (buffer.baseAddress! + filled).copyMemory(from: src.baseAddress! + Int(bodySegmentOffset), byteCount: remaining)
                }
                filled += remaining
                bodySegmentOffset += Int64(remaining)
            case .file(let fd, let offset, _):
                let n = pread(fd, buffer.baseAddress! + filled, remaining, off_t(offset + bodySegmentOffset))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    // The file shrank or cannot be read: the body cannot be what was promised.
                    readFailure = TransferFailure(.cannotOpenFile, n == 0 ? "the file to send ended early"
                        : "cannot read the file to send: \(String(cString: strerror(errno)))")
                    return Int(CURL_READFUNC_ABORT)
                }
                filled += n
                bodySegmentOffset += Int64(n)
            }
        }
        pacer?.moved(filled, by: self)
        bodySent += Int64(filled)
        handle.setSent(bodySent)
        counters.sent.add(Int64(filled), ordering: .relaxed)
        tallySent(filled)
        return filled
    }

    /// CURLOPT_SEEKFUNCTION: rewind (or move) the body to `offset` for a resend.
    func seek(to offset: Int64) -> Bool {
        guard case .segments(let segments) = files.body, offset >= 0, offset <= files.body.totalLength else { return false }
        var rest = offset
        bodySegment = 0
        while bodySegment < segments.count && rest >= segments[bodySegment].length && segments[bodySegment].length > 0 {
            rest -= segments[bodySegment].length
            bodySegment += 1
        }
        bodySegmentOffset = rest
        bodySent = offset
        return true
    }

    /// CURLOPT_HEADERFUNCTION: one header line (or status line, or the empty line ending a head).
    func header(_ line: UnsafeRawBufferPointer) -> Int {
        lastActivity = MonotonicClock.now()
        sends.responseArrived()
        switch collector.consume(line) {
        case .pending:
            return line.count
        case .complete(let status, let headers):
            return headComplete(status: status, headers: headers) ? line.count : 0
        }
    }

    /// A whole response head arrived: informational, a redirect curl will follow, or the final one.
    private func headComplete(status: Int, headers: [(String, String)]) -> Bool {
        if status < 200 {
            // libcurl hands 1xx heads to the header callback like any other, and then goes on.
            if status == 104 {
                observer.transferReceivedUploadResumption(handle, ResponseHead(status: status, headers: headers, url: effectiveURL ?? requestURL))
            }
            return true
        }
        let head = ResponseHead(status: status, headers: headers, url: effectiveURL ?? requestURL)
        storeCookies(of: head)
        if spec.followRedirects, [301, 302, 303, 307, 308].contains(status),
           let location = head.header("location"), let target = URLParts.resolve(location, against: head.url)
        {
            observer.transferRedirected(handle, from: head.url, to: target, status: status)
            return !restartsForCredential(to: target, status: status)
        }
        handle.setPhase(.transferring)
        if let resume = files.resume, !acceptResumedResponse(head, resume: resume) { return false }
        if let length = head.expectedContentLength {
            handle.setExpected(length + (resumedAtOffset ?? 0))
            // A body declared too long is refused before its first byte (RFC 9110 §8.6: a
            // Content-Length it then exceeds is refused by curl, and one it falls short of is a
            // short body, not a larger one).
            if let max = spec.maxBodyBytes, length + (resumedAtOffset ?? 0) > max {
                writeFailure = TransferFailure(.dataLengthExceedsMaximum, "the response body is \(length + (resumedAtOffset ?? 0)) bytes, more than \(max)")
                return false
            }
        }
        finalResponse = head
        if spec.verifyOriginDigests { hashDeclaredDigests(of: head) }
        if status == 200 || status == 206, let length = head.expectedContentLength { beginDirectOutput(expecting: length) }
        observer.transferReceivedResponse(handle, head, resumedAtOffset: resumedAtOffset)
        reportPartialWorthIfDue(now: lastActivity)
        return true
    }

    /// The final response declares digests of the file: their algorithms are computed too. A
    /// hasher that lacks one starts over with all of them, before the first body byte — from
    /// the file's start, so a continued file is read back once (the page cache has it).
    private func hashDeclaredDigests(of head: ResponseHead) {
        guard case .file(let fd, _) = files.output else { return }
        declaredDigests = DeclaredDigest.parse(head.headers, partial: resumedAtOffset != nil)
        let have = hasher?.algorithms ?? []
        let missing = declaredDigests.map(\.algorithm).filter { !have.contains($0) }
        guard !missing.isEmpty else { return }
        hasher?.cancel { _ in }
        hasher = makeHasher(fd: fd, algorithms: have + missing)
        hasher?.advance(to: writeOffset)
    }

    /// A ranged request answered with 206 for our offset continues the file. Any other answer is
    /// not a continuation (RFC 9110 §13.1.5: a 200 means the validator no longer matches, or the
    /// origin ignores ranges), so the file starts over from zero — never appended to.
    /// A 416 means the partial file is already as long as the resource, or longer (a stop came
    /// between the last byte and the commit): its bytes cannot be vouched for without a body to
    /// hash, so the attempt fails transiently with an empty file and the retry fetches it whole.
    private func acceptResumedResponse(_ head: ResponseHead, resume: ResumeRequest) -> Bool {
        if head.status == 206 {
            guard let range = head.header("content-range"), ContentRange.start(range) == resume.offset else {
                writeFailure = TransferFailure(.badServerResponse, "the origin answered the range request with another range")
                return false
            }
            resumedAtOffset = resume.offset
            return true
        }
        guard case .file = files.output else { return true }
        guard !isFenced() else { return false }
        if ftruncate(outputFD, 0) != 0 {
            writeFailure = TransferFailure(.cannotWriteToFile, "cannot truncate the file: \(String(cString: strerror(errno)))")
            return false
        }
        writeOffset = 0
        writebackOffset = 0
        restartedFromZero = true
        handle.setReceived(0)
        if head.status == 416 {
            writeFailure = TransferFailure(.badServerResponse, "the origin refused the range (416); the file starts over")
            return false
        }
        if let old = hasher, case .file(let fd, _) = files.output {
            old.cancel { _ in }
            hasher = makeHasher(fd: fd, algorithms: old.algorithms)
        }
        return true
    }

    private func makeHasher(fd: Int32, algorithms: [DigestAlgorithm], continuing checkpoint: DigestCheckpoint? = nil) -> FileHasher {
        guard spec.checkpointDigests else { return FileHasher(fd: fd, algorithms: algorithms) }
        return FileHasher(fd: fd, algorithms: algorithms, continuing: checkpoint) { [observer, handle] checkpoint in
            observer.transferCheckpointedDigests(handle, checkpoint)
        }
    }

    // MARK: outcome

    /// Tells the lifecycle what happened inside a curl callback, where nothing may be done to
    /// curl: such an event only changes the state.
    func note(_ event: TransferLifecycle.Event) {
        let transition = lifecycle.handle(event)
        assert(transition == .perform([]), "\(event) inside a callback: \(transition)")
    }

    /// Builds the outcome once the lifecycle ended, before the easy handle (if any) goes back.
    func outcome(curlCode: CURLcode?, errorDetail: String) -> TransferOutcome {
        let closeFailure = closeDirectOutput()
        let ending = lifecycle.ending
        let stopReason = lifecycle.stopReason
        var outcome = TransferOutcome()
        outcome.response = finalResponse
        outcome.resumedAtOffset = resumedAtOffset
        outcome.restartedFromZero = restartedFromZero
        outcome.declaredDigests = declaredDigests
        if let from = hasher?.continuedFrom, from > 0 { outcome.digestsContinuedFrom = from }
        outcome.stopReason = stopReason
        outcome.started = ending?.started ?? false
        outcome.requestSent = sends.requestMayHaveReachedOrigin
        outcome.resends = sends.resends
        switch files.output {
        case .file: outcome.bytesReceived = writeOffset
        case .memory: outcome.bytesReceived = Int64(memoryBody.count); outcome.body = memoryBody
        case .discard: outcome.bytesReceived = received
        }
        if case .bytes = files.body, let easy { countWholeBodySent(easy) }
        flushTally()
        outcome.bytesSent = bodySent
        outcome.bytesExpectedToSend = files.body.totalLength
        if let easy {
            outcome.metrics = CurlInfo.metrics(easy)
            outcome.metrics.redirectCount += redirectsBefore
        }
        if let stopReason {
            outcome.failure = TransferFailure(stopReason == .resourceTimeout ? .timedOut : .cancelled,
                                              stopReason == .resourceTimeout ? "the task's resource timeout passed" : "stopped")
        } else if case .refused(let failure)? = ending {
            outcome.failure = failure
        } else if let code = curlCode, code != CURLE_OK {
            if let blockedAddress {
                outcome.failure = TransferFailure(.blockedByPolicy, "connecting to \(blockedAddress) is refused by the network policy",
                                                  curlCode: Int(code.rawValue))
            } else if ending == .idle {
                outcome.failure = TransferFailure(.timedOut, "no data moved for \(spec.idleTimeout) seconds", curlCode: Int(code.rawValue))
            } else if sends.refusedResend {
                outcome.failure = TransferFailure(.networkConnectionLost,
                    "the connection closed before any response to the \(requestMethod) request, which is not sent again",
                    curlCode: Int(code.rawValue))
            } else if let failure = writeFailure ?? readFailure {
                outcome.failure = TransferFailure(failure.code, failure.message, curlCode: Int(code.rawValue))
            } else {
                outcome.failure = CurlErrorMapping.failure(code, detail: errorDetail,
                                                           certificateRequested: serverRequestedClientCertificate && finalResponse == nil,
                                                           inHead: finalResponse == nil)
            }
        } else if let closeFailure {
            outcome.failure = closeFailure
        } else if credentialsRefused {
            outcome.failure = TransferFailure(.userAuthenticationRequired, "the origin refused the session's credentials (HTTP 401)")
        }
        return outcome
    }

    private var effectiveURL: String? { easy.flatMap { CurlInfo.string($0, CURLINFO_EFFECTIVE_URL) } }
}
