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
    private let shared: ServerShared
    private let limits: HTTPServerConfiguration
    var slot = -1

    private(set) var phase = Phase.awaitingHead
    /// When the current phase times out (monotonic ns); `.max` while a handler has the request.
    private(set) var deadline: UInt64
    private let inbound = ByteBuffer()
    private var scanner: HeadScanner
    private var readable = false
    /// The peer's FIN (or an error) was signalled: read until end of input, not just until a short read.
    private var peerHungUp = false
    private var requestCount = 0
    private var generation: UInt64 = 0
    private var draining = false
    private var processing = false

    private var exchange: Exchange?
    private var decoder = BodyDecoder(.length(0))
    private var bodyTarget = BodyTarget.discard

    private var outbound: [UInt8] = []
    private var outboundSent = 0
    private var file: FileRegion?
    private var fileSent = 0
    private var stream: ResponseStream?
    private var streamFinished = true
    private var chunkedStream = true

    init(fd: Int32, remoteAddress: String, worker: ServerWorker) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.worker = worker
        shared = worker.shared
        limits = worker.shared.configuration
        scanner = HeadScanner(maxRequestLine: limits.maxRequestLineBytes, maxHeaderBytes: limits.maxHeaderBytes)
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
    private func process() {
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
    private func readMore() -> Bool {
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
                deadline = MonotonicClock.after(seconds: limits.bodyTimeout)
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

    // MARK: requests

    /// Parses the head at the front of `inbound` and routes it. Only a malformed head throws; once
    /// the head is known, every refusal is answered through `respondEarly`.
    private func startRequest(headLength: Int) throws(HTTPProblem) {
        let bytes = inbound.readable
        let head = try RequestHeadParser.parse(UnsafeRawBufferPointer(rebasing: bytes[scanner.leadingBytes..<headLength]))
        inbound.consume(headLength)
        scanner.reset()
        requestCount += 1
        generation += 1
        let requestID = worker.requestID(from: head.headers)
        exchange = Exchange(head: head, requestID: requestID, start: MonotonicClock.now())
        phase = .handling
        deadline = .max
        let hasBody = !head.framing.isEmpty

        let route: Router.Route, parameters: PathParameters
        let match = shared.router.match(method: head.method, path: head.path)
        if case .found = match {} else if let check = shared.router.unmatchedGuard(for: head.path),
            let denial = check(HTTPRequest(head: head, route: "unmatched", parameters: PathParameters(), body: [],
                                           id: requestID, remoteAddress: remoteAddress))
        {
            return respondEarly(denial, unreadBody: hasBody)
        }
        switch match {
        case .notFound:
            return respondEarly(.problem(HTTPProblem(404, "not_found", "no resource at \(head.path)")), unreadBody: hasBody)
        case .methodNotAllowed(let allowed):
            let allow = allowed.joined(separator: ", ")
            return respondEarly(.problem(
                HTTPProblem(405, "method_not_allowed", "\(head.method) is not allowed here; allowed: \(allow)"),
                headers: HTTPHeaders([("Allow", allow)])), unreadBody: hasBody)
        case .found(let r, let p):
            route = r
            parameters = p
        }
        exchange?.route = route.pattern
        exchange?.routeIndex = route.index
        let request = HTTPRequest(head: head, route: route.pattern, parameters: parameters, body: [],
                                  id: requestID, remoteAddress: remoteAddress)
        if let denial = route.guardCheck?(request) { return respondEarly(denial, unreadBody: hasBody) }
        switch route.action {
        case .buffered(let handler):
            let limit = limits.maxBufferedBodyBytes
            if case .length(let n) = head.framing, n > limit {
                return respondEarly(.problem(tooLarge(limit)), unreadBody: true)
            }
            bodyTarget = .collect([], limit: limit, request: request, handler: handler)
        case .streamed(let factory):
            do {
                bodyTarget = .sink(try factory(request), request: request)
            } catch {
                return respondEarly(.problem(error), unreadBody: hasBody)
            }
        }
        decoder = BodyDecoder(head.framing, maxTrailerBytes: limits.maxHeaderBytes)
        if decoder.isComplete { return bodyComplete() }
        phase = .readingBody
        deadline = MonotonicClock.after(seconds: limits.bodyTimeout)
        if head.expectsContinue {
            // The phase is set first: a failed write closes the connection inside `flush`, and
            // setting it afterwards would revive a closed connection (and close its fd twice).
            outbound.append(contentsOf: Connection.continueLine)
            flush()
        }
    }

    private func tooLarge(_ limit: Int) -> HTTPProblem {
        HTTPProblem(413, "content_too_large", "the request body is larger than \(limit) bytes")
    }

    private func feedBody() {
        do {
            let consumed = try decoder.decode(inbound.readable) { (chunk) throws(HTTPProblem) in
                try bodyTarget.write(chunk, tooLarge: tooLarge)
            }
            inbound.consume(consumed)
        } catch {
            bodyTarget.abort()
            bodyTarget = .discard
            return respondEarly(.problem(error), unreadBody: true)
        }
        if decoder.isComplete { bodyComplete() }
    }

    private func bodyComplete() {
        phase = .handling
        deadline = .max
        let target = bodyTarget
        bodyTarget = .discard
        let responder = Responder(connection: self, loop: worker.loop, generation: generation,
                                  requestID: exchange?.requestID ?? "")
        switch target {
        case .collect(let body, _, var request, let handler):
            request.body = body
            handler(request, responder)
        case .sink(let sink, _):
            sink.finish(responder)
        case .discard:
            break
        }
    }

    /// Answers without handing the request to a handler. If the client may still be sending body
    /// bytes, the connection cannot carry another request and closes after the response.
    private func respondEarly(_ response: HTTPResponse, unreadBody: Bool) {
        if unreadBody { exchange?.unreadBody = true }
        phase = .handling
        send(response, generation: generation)
    }

    /// A request that could not be parsed: answer with the problem and close.
    private func refuse(_ problem: HTTPProblem) {
        generation += 1
        let head = HTTPRequestHead(method: "-", target: "-", path: "-", query: nil, versionMinor: 1,
                                   headers: HTTPHeaders(), keepAlive: false, framing: .length(0), expectsContinue: false)
        var ex = Exchange(head: head, requestID: worker.requestID(from: HTTPHeaders()), start: MonotonicClock.now())
        ex.unreadBody = true
        exchange = ex
        phase = .handling
        send(.problem(problem), generation: generation)
    }

    // MARK: responses

    func send(_ response: HTTPResponse, generation: UInt64) {
        guard generation == self.generation, phase == .handling, var ex = exchange
        else {
            if case .file(let region) = response.body { region.close() }
            return
        }
        let config = limits
        // HTTP/1.0 has no chunked coding: a streamed body is delimited by closing the connection.
        let rawStream: Bool = if case .stream = response.body { ex.head.versionMinor == 0 } else { false }
        let keepAlive = ex.head.keepAlive && !ex.unreadBody && !draining && !rawStream
            && requestCount < config.maxRequestsPerConnection
        ex.status = response.status
        ex.closeAfter = !keepAlive
        exchange = ex

        var head = ResponseHead(status: response.status, headers: response.headers, versionMinor: ex.head.versionMinor,
                                keepAlive: keepAlive, requestID: ex.requestID, date: worker.date())
        // RFC 9110 §6.4.1, RFC 9112 §6.3: a response to HEAD, and a 1xx, 204 or 304, ends at its
        // header section; body bytes a handler passed anyway would be read as the next response.
        let sendsBody = !ex.head.isHead && !ResponseHead.isBodyless(response.status)
        switch response.body {
        case .empty:
            head.contentLength = 0
            head.serialize(into: &outbound)
        case .bytes(let bytes):
            head.contentLength = bytes.count
            head.serialize(into: &outbound)
            if sendsBody { outbound.append(contentsOf: bytes) }
        case .file(let region):
            head.contentLength = region.count
            head.serialize(into: &outbound)
            if sendsBody { file = region; fileSent = 0 } else { region.close() }
        case .stream(let producer):
            head.chunked = !rawStream && !ResponseHead.isBodyless(response.status)
            chunkedStream = !rawStream
            head.serialize(into: &outbound)
            if sendsBody {
                let s = ResponseStream(connection: self, loop: worker.loop, generation: generation)
                stream = s
                streamFinished = false
                producer(s)
            }
        }
        phase = .writing
        deadline = MonotonicClock.after(seconds: config.writeTimeout)
        flush()
    }

    func writeChunk(_ bytes: [UInt8], generation: UInt64) {
        guard generation == self.generation, stream != nil, !streamFinished, phase == .writing else { return }
        if chunkedStream {
            outbound.append(contentsOf: Array(String(bytes.count, radix: 16).utf8))
            outbound.append(contentsOf: Connection.crlf)
            outbound.append(contentsOf: bytes)
            outbound.append(contentsOf: Connection.crlf)
        } else {
            outbound.append(contentsOf: bytes)
        }
        // A client that reads nothing while events pile up is cut off, not buffered for forever.
        if outbound.count - outboundSent > 16 * 1024 * 1024 { return close() }
        flush()
    }

    func finishStream(generation: UInt64) {
        guard generation == self.generation, stream != nil, !streamFinished, phase == .writing else { return }
        if chunkedStream { outbound.append(contentsOf: Connection.lastChunk) }
        streamFinished = true
        flush()
    }

    /// Writes what is pending; completes the response when everything is out.
    private func flush() {
        while outboundSent < outbound.count {
            let n = outbound.withUnsafeBytes { buf in
                Glibc.send(fd, buf.baseAddress! + outboundSent, buf.count - outboundSent, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                outboundSent += n
                deadline = phase == .writing ? MonotonicClock.after(seconds: limits.writeTimeout) : deadline
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                // A stream's new chunk met a socket still full of earlier ones: the client is
                // not reading, which is what the write timeout is for.
                if phase == .writing && deadline == .max {
                    deadline = MonotonicClock.after(seconds: limits.writeTimeout)
                }
                return
            }
            return close()
        }
        if outbound.capacity > 256 * 1024 {
            outbound = []
        } else {
            outbound.removeAll(keepingCapacity: true)
        }
        outboundSent = 0
        if let region = file {
            while fileSent < region.count {
                var offset = off_t(region.offset + fileSent)
                let n = sendfile(fd, region.fd, &offset, min(region.count - fileSent, 1 << 30))
                if n > 0 {
                    fileSent += n
                    deadline = MonotonicClock.after(seconds: limits.writeTimeout)
                    continue
                }
                if n < 0 && errno == EINTR { continue }
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
                // The file shrank under us or the client went away: the response cannot complete.
                return close()
            }
            region.close()
            file = nil
        }
        guard phase == .writing else { return }
        guard streamFinished else {
            // All written so far is out, and the stream waits on its producer: an event stream
            // may be quiet for minutes, which is no client stalling a write. Without this, every
            // pause longer than `writeTimeout` cut the stream off.
            deadline = .max
            return
        }
        responseComplete()
    }

    private func responseComplete() {
        if let s = stream {
            stream = nil
            s.terminated()
        }
        guard let ex = exchange else { return }
        exchange = nil
        worker.recordCompleted(ex, remoteAddress: remoteAddress)
        // Draining (shutdown) closes after the current response even if it promised keep-alive
        // (RFC 9112 §9.6 lets a server close between responses); otherwise the connection would
        // sit idle until the grace period ran out.
        if ex.closeAfter || draining {
            // Requests the client pipelined and we will not answer may still be arriving; a plain
            // close with unread input sends a reset that can destroy the response in flight.
            return ex.unreadBody || !inbound.isEmpty ? lingeringClose() : close()
        }
        phase = .awaitingHead
        inbound.releaseIfEmpty()
        deadline = MonotonicClock.after(seconds: inbound.isEmpty
            ? limits.idleTimeout : limits.headerTimeout)
        if !inbound.isEmpty || readable { process() }
    }

    // MARK: closing

    /// Closes after a response sent while the client may still be sending: shut our side down and
    /// read (and drop) what arrives for a moment, so the kernel does not answer the client's unread
    /// bytes with a reset that could destroy the response before the client reads it.
    private func lingeringClose() {
        shutdown(fd, Int32(SHUT_WR))
        phase = .lingering
        deadline = MonotonicClock.after(seconds: 2)
        discardInput()
    }

    private func discardInput() {
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
        file?.close()
        file = nil
        if let s = stream {
            stream = nil
            s.terminated()
        }
        if let ex = exchange, ex.status != nil { worker.recordCompleted(ex, remoteAddress: remoteAddress) }
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
        if stream != nil { finishStream(generation: generation) }
    }

    private var hasPendingInput: Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    private static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
    private static let crlf: [UInt8] = [0x0D, 0x0A]
    private static let lastChunk = Array("0\r\n\r\n".utf8)
}

/// What is known of the request being served, for its response and its access-log line.
struct Exchange {
    let head: HTTPRequestHead
    let requestID: String
    let start: UInt64
    var route = "unmatched"
    var routeIndex = -1
    var status: Int?
    var closeAfter = false
    /// Body bytes the client may still send that were never read.
    var unreadBody = false
}

/// Where the bytes of a request body go.
enum BodyTarget {
    case discard
    case collect([UInt8], limit: Int, request: HTTPRequest, handler: RequestHandler)
    case sink(RequestBodySink, request: HTTPRequest)

    mutating func write(_ chunk: UnsafeRawBufferPointer, tooLarge: (Int) -> HTTPProblem) throws(HTTPProblem) {
        switch self {
        case .discard:
            break
        case .collect(var bytes, let limit, let request, let handler):
            guard bytes.count + chunk.count <= limit else { throw tooLarge(limit) }
            self = .discard  // keep `bytes` uniquely referenced while appending
            bytes.append(contentsOf: chunk)
            self = .collect(bytes, limit: limit, request: request, handler: handler)
        case .sink(let sink, _):
            try sink.write(chunk)
        }
    }

    func abort() {
        if case .sink(let sink, _) = self { sink.abort() }
    }
}
