/// What is known of the request being served, for its response and its access-log line.
struct Exchange {
    let head: HTTPRequestHead
    let requestID: String
    let start: UInt64
    var route = "unmatched"
    var routeIndex = -1
    var status: Int?
    /// The response's `Location`: what a request created, for its completion (the audit line).
    var location: String?
    var closeAfter = false
    /// Body bytes the client may still send that were never read.
    var unreadBody = false
    /// From the route's guard: headers every response carries, and what runs once it was sent.
    var admission = Admission.admitted
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
