import CLinux
import Glibc
import Reactor

/// Reading a request: its head, its body (Content-Length or chunked), and refusing what breaks the limits.
extension Connection {
    // MARK: requests

    /// Parses the head at the front of `inbound` and routes it. Only a malformed head throws; once
    /// the head is known, every refusal is answered through `respondEarly`.
    func startRequest(headLength: Int) throws(HTTPProblem) {
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
        if case .found = match {} else if let check = shared.router.unmatchedGuard(for: head.path) {
            exchange?.admission = check(HTTPRequest(head: head, route: "unmatched", parameters: PathParameters(), body: [],
                                                    id: requestID, remoteAddress: remoteAddress))
            if let denial = exchange?.admission.denial { return respondEarly(denial, unreadBody: hasBody) }
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
        var request = HTTPRequest(head: head, route: route.pattern, parameters: parameters, body: [],
                                  id: requestID, remoteAddress: remoteAddress)
        if let check = route.guardCheck {
            let admission = check(request)
            exchange?.admission = admission
            if let denial = admission.denial { return respondEarly(denial, unreadBody: hasBody) }
            request.identity = admission.identity
        }
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
        bodyStartedAt = MonotonicClock.now()
        bodyBytesRead = 0
        deadline = bodyDeadline()
        if head.expectsContinue {
            // The phase is set first: a failed write closes the connection inside `flush`, and
            // setting it afterwards would revive a closed connection (and close its fd twice).
            outbound.append(contentsOf: Connection.continueLine)
            flush()
        }
    }

    func tooLarge(_ limit: Int) -> HTTPProblem {
        HTTPProblem(413, "content_too_large", "the request body is larger than \(limit) bytes")
    }

    func feedBody() {
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

    func bodyComplete() {
        phase = .handling
        deadline = .max
        let target = bodyTarget
        bodyTarget = .discard
        let responder = Responder(connection: self, loop: worker.loop, generation: generation,
                                  requestID: exchange?.requestID ?? "")
        switch target {
        case .collect(let body, _, var request, let handler):
            request.body = body
            if body.count >= limits.offloadBodyBytes {
                let offloaded = request
                shared.offloadedHandlers.async { handler(offloaded, responder) }
            } else {
                handler(request, responder)
            }
        case .sink(let sink, _):
            sink.finish(responder)
        case .discard:
            break
        }
    }

    /// Answers without handing the request to a handler. If the client may still be sending body
    /// bytes, the connection cannot carry another request and closes after the response.
    func respondEarly(_ response: HTTPResponse, unreadBody: Bool) {
        if unreadBody { exchange?.unreadBody = true }
        phase = .handling
        send(response, generation: generation)
    }

    /// A request that could not be parsed: answer with the problem and close.
    func refuse(_ problem: HTTPProblem) {
        generation += 1
        let head = HTTPRequestHead(method: "-", target: "-", path: "-", query: nil, versionMinor: 1,
                                   headers: HTTPHeaders(), keepAlive: false, framing: .length(0), expectsContinue: false)
        var ex = Exchange(head: head, requestID: worker.requestID(from: HTTPHeaders()), start: MonotonicClock.now())
        ex.unreadBody = true
        exchange = ex
        phase = .handling
        send(.problem(problem), generation: generation)
    }
}
