import Glibc
import JSON

/// A response a handler hands to its `Responder`. `Date`, `Content-Length` or
/// `Transfer-Encoding`, and `Connection` are added by the server.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: ResponseBody

    public init(status: Int = 200, headers: HTTPHeaders = HTTPHeaders(), body: ResponseBody = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response from already-encoded bytes.
    public static func json(_ bytes: [UInt8], status: Int = 200, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var h = headers
        h.set("Content-Type", "application/json")
        return HTTPResponse(status: status, headers: h, body: .bytes(bytes))
    }

    public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", contentType)]), body: .bytes(Array(text.utf8)))
    }

    /// An RFC 9457 problem document.
    public static func problem(_ problem: HTTPProblem, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var h = headers
        h.set("Content-Type", "application/problem+json")
        return HTTPResponse(status: problem.status, headers: h, body: .bytes(problem.jsonBytes()))
    }
}

extension HTTPResponse {
    /// A problem document names the request it answers as its `instance` (RFC 9457 §3.1.5): the
    /// `X-Request-Id` the response carries, so a client's report can be found in the logs. Every
    /// response goes through `Connection.send`, which adds it. The id
    /// is a plain token (see `ServerWorker.requestID`), so it needs no escaping.
    mutating func addProblemInstance(_ requestID: String) {
        guard status >= 400, !requestID.isEmpty, headers["content-type"] == "application/problem+json",
              case .bytes(var bytes) = body, bytes.last == UInt8(ascii: "}"), !HTTPResponse.namesInstance(bytes) else { return }
        bytes.removeLast()
        bytes.append(contentsOf: Array(#","instance":"\#(requestID)"}"#.utf8))
        body = .bytes(bytes)
    }

    /// A document relayed from another server of ours already names its instance. Inside a JSON
    /// string every quote is escaped, so these bytes can only be the member's own name.
    private static func namesInstance(_ bytes: [UInt8]) -> Bool {
        let member = HTTPResponse.instanceMember
        guard bytes.count >= member.count else { return false }
        return (0...(bytes.count - member.count)).contains { start in
            bytes[start] == member[0] && bytes[start..<start + member.count].elementsEqual(member)
        }
    }

    private static let instanceMember = Array(#""instance":"#.utf8)
}

/// What follows the head of a response.
public enum ResponseBody: Sendable {
    case empty
    case bytes([UInt8])
    /// A region of an open file, sent with sendfile(2). The server closes the descriptor after.
    case file(FileRegion)
    /// Regions of one open file, each after bytes of its own: a `multipart/byteranges` body.
    case fileParts(FileParts)
    /// Sent with chunked coding as the producer writes to the `ResponseStream` it is given.
    case stream(@Sendable (ResponseStream) -> Void)
    /// Exactly `length` bytes, sent with `Content-Length` as the producer writes them: a body
    /// relayed from another server, whose length is known before its bytes are. A producer that
    /// finishes short (or writes more) has the connection closed, so the client sees the body
    /// incomplete rather than misframed.
    case streamOfLength(Int, @Sendable (ResponseStream) -> Void)
}

/// An open file and the byte range of it to send. Owns the descriptor.
public struct FileRegion: Sendable {
    public let fd: Int32
    public let offset: Int
    public let count: Int

    public init(fd: Int32, offset: Int, count: Int) {
        self.fd = fd
        self.offset = offset
        self.count = count
    }

    func close() { _ = Glibc.close(fd) }
}

/// Regions of an open file, each preceded by bytes of its own (a part's header section), and bytes
/// after the last (RFC 9110 §14.6's closing delimiter). Sent with sendfile(2) region by region, so
/// a response of many ranges costs no more memory than their headers. Owns the descriptor.
public struct FileParts: Sendable {
    public struct Part: Sendable {
        public let head: [UInt8]
        public let offset: Int
        public let count: Int

        public init(head: [UInt8], offset: Int, count: Int) {
            self.head = head
            self.offset = offset
            self.count = count
        }
    }

    public let fd: Int32
    public let parts: [Part]
    public let trailer: [UInt8]

    public init(fd: Int32, parts: [Part], trailer: [UInt8]) {
        self.fd = fd
        self.parts = parts
        self.trailer = trailer
    }

    var contentLength: Int { parts.reduce(trailer.count) { $0 + $1.head.count + $1.count } }
}

extension HTTPProblem {
    /// The RFC 9457 document: `type`, `title`, `status`, `detail`, our stable `code`, and `errors`
    /// (no field is at fault in a problem the server itself finds).
    public func jsonBytes() -> [UInt8] {
        var out = JSONWriter()
        out.beginObject()
        out.key("type"); out.string("urn:transferd:problem:\(code)")
        out.key("title"); out.string(HTTPStatus.reason(status))
        out.key("status"); out.int(status)
        out.key("detail"); out.string(detail)
        out.key("code"); out.string(code)
        out.key("errors"); out.beginArray(); out.endArray()
        out.endObject()
        return out.bytes
    }
}
