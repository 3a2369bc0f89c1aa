import CLinux
import Glibc
import Reactor

/// One client connection, confined to its worker's loop thread.
///
/// Lifecycle: awaiting a head → reading its body → handling (the handler has the `Responder`) →
/// writing the response → awaiting the next head, or closing. Reading stops while a request is
/// handled and written, so pipelined requests are answered strictly in order and a client that
/// pipelines without reading cannot make the server buffer without bound.
final class Connection: EventHandler, @unchecked Sendable {
    enum Phase { case awaitingHead, readingBody, handling, writing, lingering, closed }

    let fd: Int32
    let remoteAddress: String
    /// `unowned(unsafe)`: a worker outlives its connections (it closes them before it goes), and
    /// checked `unowned` access costs an atomic retain and release of the worker per use — a dozen
    /// per request. For the same reason the server's shared state and limits are kept here.
    unowned(unsafe) let worker: ServerWorker
    let shared: ServerShared
    let limits: HTTPServerConfiguration
    var slot = -1

    var phase = Phase.awaitingHead
    /// When the current phase times out (monotonic ns); `.max` while a handler has the request.
    var deadline: UInt64
    let inbound = ByteBuffer()
    var scanner: HeadScanner
    var readable = false
    /// The peer's FIN (or an error) was signalled: read until end of input, not just until a short read.
    var peerHungUp = false
    var requestCount = 0
    var generation: UInt64 = 0
    var draining = false
    var processing = false

    var exchange: Exchange?
    var decoder = BodyDecoder(.length(0))
    var bodyTarget = BodyTarget.discard
    /// When the body began (monotonic ns) and how much of it has been read since: its rate budget.
    var bodyStartedAt: UInt64 = 0
    var bodyBytesRead = 0

    var outbound: [UInt8] = []
    var outboundSent = 0
    var file: FileRegion?
    var fileSent = 0
    /// A multipart body's regions still to send after `file` (which then shares its descriptor).
    var fileParts: (parts: FileParts, next: Int)?
    var stream: ResponseStream?
    var streamFinished = true
    var chunkedStream = true
    /// A `streamOfLength` body's declared length, and how much of it the producer wrote.
    var streamLength: Int?
    var streamWritten = 0
    /// What runs once the stream's bytes written so far are out (`ResponseStream.write(_:whenSent:)`).
    var streamSentActions: [@Sendable () -> Void] = []

    init(fd: Int32, remoteAddress: String, worker: ServerWorker) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.worker = worker
        shared = worker.shared
        limits = worker.shared.configuration
        scanner = HeadScanner(maxRequestLine: limits.maxRequestLineBytes, maxHeaderBytes: limits.maxHeaderBytes,
                              maxHeaderFields: limits.maxHeaderFields)
        // A new connection owes us a request head, so the header timeout applies from the start.
        deadline = MonotonicClock.after(seconds: limits.headerTimeout)
    }

    // MARK: events

    override func handleEvents(_ events: UInt32) {
        if events & UInt32(EPOLLERR.rawValue) != 0 { return close() }
        if events & UInt32(EPOLLRDHUP.rawValue | EPOLLHUP.rawValue) != 0 && stream != nil {
            // The client hung up during a streamed response (an event stream). The stream may
            // wait on its producer for minutes, with nothing written that would fail on the dead
            // socket and no read in progress that would see the EOF: end it now, so its producer
            // learns through `onTermination` instead of holding the connection indefinitely.
            return close()
        }
        if events & UInt32(EPOLLOUT.rawValue) != 0 && (phase == .writing || outboundSent < outbound.count) { flush() }
        if events & UInt32(EPOLLRDHUP.rawValue | EPOLLHUP.rawValue) != 0 { peerHungUp = true }
        if events & UInt32(EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue) != 0 {
            readable = true
            process()
        }
    }

    /// Parses and reads as far as the current phase allows. Not re-entered: a handler answering
    /// synchronously returns here and the loop goes on to the next pipelined request, rather than
    /// recursing once per request.
    func process() {
        guard !processing else { return }
        processing = true
        defer { processing = false }
        while true {
            switch phase {
            case .awaitingHead:
                if !inbound.isEmpty {
                    do {
                        if let headLength = try scanner.scan(inbound.readable) {
                            try startRequest(headLength: headLength)
                            continue
                        }
                    } catch {
                        return refuse(error)
                    }
                }
                guard readMore() else { return }
            case .readingBody:
                if !inbound.isEmpty {
                    feedBody()
                    if phase != .readingBody { continue }
                }
                guard readMore() else { return }
            case .lingering:
                discardInput()
                return
            case .handling, .writing, .closed:
                return
            }
        }
    }

    /// Reads what the socket has into `inbound`; false when nothing more is available now.
    func readMore() -> Bool {
        guard readable else { return false }
        let wasEmpty = inbound.isEmpty
        let space = inbound.writableSpace(atLeast: phase == .readingBody ? 64 * 1024 : 4096)
        let wanted = min(space.count, 256 * 1024)
        let n = read(fd, space.baseAddress, wanted)
        if n > 0 {
            inbound.commitWrite(n)
            // A short read emptied the socket's receive queue. The descriptor is edge-triggered,
            // and every later arrival queues a new event (epoll(7)), so the read that would only
            // return EAGAIN is skipped: one system call fewer per request. nginx does the same
            // (ngx_unix_recv with EPOLLRDHUP). After a hang-up, read on until the end of input.
            if n < wanted && !peerHungUp { readable = false }
            if phase == .readingBody {
                bodyBytesRead += n
                deadline = bodyDeadline()
            } else if wasEmpty && requestCount > 0 {
                // The first byte of a request on a kept-alive connection starts its header timeout.
                deadline = MonotonicClock.after(seconds: limits.headerTimeout)
            }
            return true
        }
        if n < 0 && errno == EINTR { return true }
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
            readable = false
            return false
        }
        // End of input or a reset: nothing more can arrive, and an incomplete request cannot be
        // answered meaningfully.
        close()
        return false
    }

    /// The sooner of the silence limit and the rate budget (`HTTPServerConfiguration.minBodyRate`).
    func bodyDeadline() -> UInt64 {
        let budget = limits.bodyRateGrace + Double(bodyBytesRead) / Double(max(1, limits.minBodyRate))
        return min(MonotonicClock.after(seconds: limits.bodyTimeout), bodyStartedAt &+ UInt64(budget * 1e9))
    }

    // MARK: closing

    /// Closes after a response sent while the client may still be sending: shut our side down and
    /// read (and drop) what arrives for a moment, so the kernel does not answer the client's unread
    /// bytes with a reset that could destroy the response before the client reads it.
    func lingeringClose() {
        shutdown(fd, Int32(SHUT_WR))
        phase = .lingering
        deadline = MonotonicClock.after(seconds: 2)
        discardInput()
    }

    func discardInput() {
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = read(fd, &scratch, scratch.count)
            if n > 0 { continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            return close()
        }
    }

    func close() {
        guard phase != .closed else { return }
        phase = .closed
        worker.loop.deregister(fd)
        Glibc.close(fd)
        bodyTarget.abort()
        bodyTarget = .discard
        if let parts = fileParts { Glibc.close(parts.parts.fd) } else { file?.close() }
        file = nil
        fileParts = nil
        streamSentActions = []
        if let s = stream {
            stream = nil
            s.terminated()
        }
        if let ex = exchange {
            // A request the client left before it was answered still ran (or may still run): its
            // guard hears of it, with status 0.
            if ex.status != nil { worker.recordCompleted(ex, remoteAddress: remoteAddress) } else { ex.admission.completion?(0, nil) }
        }
        exchange = nil
        worker.remove(self)
    }

    /// Called by the worker's sweep when `deadline` has passed.
    func timedOut() {
        switch phase {
        case .awaitingHead where !inbound.isEmpty, .readingBody:
            bodyTarget.abort()
            bodyTarget = .discard
            if exchange == nil {
                refuse(HTTPProblem(408, "request_timeout", "the request head did not arrive in time"))
            } else {
                respondEarly(.problem(HTTPProblem(408, "request_timeout", "the request body stalled")), unreadBody: true)
            }
        default:
            close()
        }
    }

    /// Shutdown: an idle connection closes now, a busy one after its current response; a streamed
    /// response (an event stream) ends cleanly.
    func drain() {
        draining = true
        // Idle only if nothing has arrived either: a request already in the socket buffer (sent
        // just before shutdown) is read and answered, not cut off.
        if phase == .awaitingHead && inbound.isEmpty && !hasPendingInput { return close() }
        // A body of declared length ends when its producer is done (within the grace period):
        // finished early, it would be cut short.
        if stream != nil && streamLength == nil { finishStream(generation: generation) }
    }

    var hasPendingInput: Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
    static let crlf: [UInt8] = [0x0D, 0x0A]
    static let lastChunk = Array("0\r\n\r\n".utf8)
}
