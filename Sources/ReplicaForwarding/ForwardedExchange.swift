import CCurl
import HTTPServer
import Reactor
import TransferEngine

/// One request on its way to the replica holding its session, and the answer on its way back.
/// Made on the server thread that received the request; from then on used on the forwarder's
/// loop only (the client connection's thread reaches it through `EventLoop.execute`).
///
/// A short answer is collected whole and sent with the holder's status, fields and body, so the
/// client sees exactly what the holder said. A long one — a task's file or body — is relayed as it
/// arrives, with the holder's `Content-Length`: collecting a file of gigabytes in memory is not an
/// option, and refusing it would make reading a file depend on which replica a client asked.
/// Reading from the holder pauses while the client is behind by `relayWindowBytes`.
final class ForwardedExchange: @unchecked Sendable {
    let holder: String
    let method: String
    let url: String
    let body: [UInt8]
    let headerLines: [String]
    /// Seconds the request asks the holder to wait for something to happen (`wait=`, a long
    /// poll), within which silence is expected.
    let wait: Double
    private let responder: Responder
    private let forwarder: ReplicaForwarder
    private let limits: ReplicaForwarder.Limits

    /// The curl handle and header list while the request is in flight.
    var easy: OpaquePointer?
    var headerList: UnsafeMutablePointer<curl_slist>?

    private enum Phase {
        /// Collecting the holder's answer.
        case collecting
        /// Answered with a relayed body; the client's connection has not handed its stream yet.
        case awaitingStream
        case relaying(ResponseStream)
        case done
    }

    private var phase = Phase.collecting
    private var collector = ResponseCollector()
    private var head: (status: Int, fields: [(String, String)])?
    private var collected: [UInt8] = []
    /// Bytes handed to the client's connection and not yet written to its socket.
    private var unsent = 0
    private var paused = false
    /// How curl ended, when it did before the client's stream was there.
    private var ending: Bool?

    init(_ request: HTTPRequest, to holder: String, forwarder: ReplicaForwarder, responder: Responder) {
        self.holder = holder
        method = request.method
        // The path and query as received (still percent-encoded), in origin form whatever form
        // the client used (RFC 9112 §3.2.2: a server takes the path of an absolute-form target).
        url = "http://\(holder)\(request.path)" + (request.head.query.map { "?\($0)" } ?? "")
        body = request.body
        // The holder refuses a wait out of its range (`nan` included) itself; here it only
        // lengthens the silence allowed, within a bound.
        wait = request.query("wait").flatMap(Double.init).flatMap { $0.isFinite ? min(max($0, 0), 3600) : nil } ?? 0
        headerLines = RelayedHeaders.requestLines(request, from: forwarder.advertisedAddress, proof: forwarder.proof)
        self.responder = responder
        self.forwarder = forwarder
        limits = forwarder.limits
    }

    // MARK: curl's callbacks (loop thread)

    func headerLine(_ line: UnsafeRawBufferPointer) {
        // A 1xx is not the answer (curl reports its head too); the final head follows it.
        if case .complete(let status, let fields) = collector.consume(line), status >= 200 { head = (status, fields) }
    }

    /// curl's write callback: how much of `data` was taken, or curl's pause value to have it
    /// offered again after `curl_easy_pause`.
    func received(_ data: UnsafeRawBufferPointer) -> Int {
        switch phase {
        case .collecting:
            collected.append(contentsOf: data)
            if collected.count > limits.collectedBodyBytes { startRelaying() }
            return data.count
        case .awaitingStream:
            paused = true
            return Int(transferd_writefunc_pause())
        case .relaying(let stream):
            guard unsent < limits.relayWindowBytes else {
                paused = true
                return Int(transferd_writefunc_pause())
            }
            pass(Array(data), to: stream)
            return data.count
        case .done:
            return data.count
        }
    }

    /// curl is done with the request (`complete`: the whole answer arrived), or it was taken off.
    func ended(complete: Bool, detail: String) {
        switch phase {
        case .collecting:
            phase = .done
            guard complete, let head else { return responder.respond(unavailable(detail)) }
            responder.respond(HTTPResponse(status: head.status, headers: RelayedHeaders.responseFields(head.fields),
                                           body: wholeBody(head.fields)))
        case .awaitingStream:
            ending = complete
        case .relaying(let stream):
            conclude(stream, complete: complete)
        case .done:
            break
        }
    }

    // MARK: relaying a long body

    private func startRelaying() {
        guard let head else { return }
        phase = .awaitingStream
        let loop = forwarder.loop
        let producer: @Sendable (ResponseStream) -> Void = { [self] stream in
            // The client went away (or the stream ended): the holder's transfer stops too.
            stream.onTermination { [self] in loop.execute { [self] in forwarder.abandon(self) } }
            loop.execute { [self] in streamOpened(stream) }
        }
        let relayed: ResponseBody = RelayedHeaders.contentLength(head.fields).map { .streamOfLength($0, producer) } ?? .stream(producer)
        responder.respond(HTTPResponse(status: head.status, headers: RelayedHeaders.responseFields(head.fields), body: relayed))
    }

    private func streamOpened(_ stream: ResponseStream) {
        guard case .awaitingStream = phase else { return }
        phase = .relaying(stream)
        pass(collected, to: stream)
        collected = []
        if let ending { return conclude(stream, complete: ending) }
        resumeIfCaughtUp()
    }

    private func pass(_ bytes: [UInt8], to stream: ResponseStream) {
        guard !bytes.isEmpty else { return }
        let count = bytes.count, loop = forwarder.loop
        unsent += count
        stream.write(bytes) { loop.execute { [self] in
            unsent -= count
            resumeIfCaughtUp()
        } }
    }

    private func resumeIfCaughtUp() {
        guard paused, unsent < limits.relayWindowBytes, let easy else { return }
        paused = false
        _ = transferd_easy_unpause(UnsafeMutableRawPointer(easy))
    }

    /// A body cut short ends the client's connection, so the client cannot take it for whole.
    private func conclude(_ stream: ResponseStream, complete: Bool) {
        phase = .done
        if complete { stream.finish() } else { stream.abort() }
    }

    // MARK: answers

    /// A HEAD's answer has no body but the holder's length, which `Content-Length` must still say.
    private func wholeBody(_ fields: [(String, String)]) -> ResponseBody {
        if method == "HEAD", let length = RelayedHeaders.contentLength(fields) { return .streamOfLength(length) { $0.finish() } }
        return collected.isEmpty ? .empty : .bytes(collected)
    }

    /// The holder could not be reached, or did not answer whole. The lease of a replica that is
    /// gone moves to another within the lease timeout, so a retry soon finds the new holder.
    private func unavailable(_ detail: String) -> HTTPResponse {
        .problem(HTTPProblem(503, "replica_unavailable",
                             "the replica holding this session (\(holder)) did not answer: \(detail); retry shortly"),
                 headers: HTTPHeaders([("Retry-After", "1")]))
    }
}
