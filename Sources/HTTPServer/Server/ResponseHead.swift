/// Serializes a response's status line and header section. The framing and connection headers
/// are the server's to write; a handler's own copies of them are dropped.
struct ResponseHead {
    let status: Int
    let headers: HTTPHeaders
    let versionMinor: Int
    let keepAlive: Bool
    let requestID: String
    let date: [UInt8]
    var contentLength: Int?
    var chunked = false

    init(status: Int, headers: HTTPHeaders, versionMinor: Int, keepAlive: Bool, requestID: String, date: [UInt8],
         contentLength: Int? = nil)
    {
        self.status = status
        self.headers = headers
        self.versionMinor = versionMinor
        self.keepAlive = keepAlive
        self.requestID = requestID
        self.date = date
        self.contentLength = contentLength
    }

    func serialize(into out: inout [UInt8]) {
        out.append(contentsOf: versionMinor == 0 ? ResponseHead.http10 : ResponseHead.http11)
        out.appendDecimal(Int64(status))
        out.append(0x20)
        out.append(contentsOf: HTTPStatus.reason(status).utf8)
        out.append(contentsOf: ResponseHead.crlf)
        out.append(contentsOf: ResponseHead.dateName)
        out.append(contentsOf: date)
        out.append(contentsOf: ResponseHead.crlf)
        // RFC 9110 §8.6: no Content-Length on 1xx or 204; 304 describes the selected representation.
        let bodyless = ResponseHead.isBodyless(status)
        if chunked && !bodyless {
            out.append(contentsOf: ResponseHead.chunkedLine)
        } else if let contentLength, !bodyless {
            out.append(contentsOf: ResponseHead.contentLengthName)
            out.appendDecimal(Int64(contentLength))
            out.append(contentsOf: ResponseHead.crlf)
        }
        if !keepAlive {
            out.append(contentsOf: ResponseHead.connectionClose)
        } else if versionMinor == 0 {
            out.append(contentsOf: ResponseHead.connectionKeepAlive)
        }
        if !requestID.isEmpty {
            out.append(contentsOf: ResponseHead.requestIDName)
            out.append(contentsOf: requestID.utf8)
            out.append(contentsOf: ResponseHead.crlf)
        }
        for (name, value) in headers where !ResponseHead.isServerOwned(name) && ResponseHead.isWellFormed(name, value) {
            out.append(contentsOf: name.utf8)
            out.append(0x3A)
            out.append(0x20)
            out.append(contentsOf: value.utf8)
            out.append(contentsOf: ResponseHead.crlf)
        }
        out.append(contentsOf: ResponseHead.crlf)
    }

    /// RFC 9110 §6.4.1: 1xx, 204 and 304 responses never have content.
    static func isBodyless(_ status: Int) -> Bool { status < 200 || status == 204 || status == 304 }

    /// A field a handler built from untrusted text (an id, a URL) must not end the header line
    /// early: a CR or LF in a value would let it add fields or a body of its own (response
    /// splitting). Such a field is dropped rather than mended (RFC 9110 §5.1, §5.5).
    private static func isWellFormed(_ name: String, _ value: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy(CharacterClass.isTokenChar)
            && value.utf8.allSatisfy(CharacterClass.isFieldValueChar)
    }

    private static func isServerOwned(_ name: String) -> Bool {
        name.equalsIgnoringASCIICase("content-length") || name.equalsIgnoringASCIICase("transfer-encoding")
            || name.equalsIgnoringASCIICase("connection") || name.equalsIgnoringASCIICase("date")
            || name.equalsIgnoringASCIICase("x-request-id")
    }

    private static let http11 = Array("HTTP/1.1 ".utf8)
    private static let http10 = Array("HTTP/1.0 ".utf8)
    private static let crlf: [UInt8] = [0x0D, 0x0A]
    private static let dateName = Array("Date: ".utf8)
    private static let contentLengthName = Array("Content-Length: ".utf8)
    private static let chunkedLine = Array("Transfer-Encoding: chunked\r\n".utf8)
    private static let connectionClose = Array("Connection: close\r\n".utf8)
    private static let connectionKeepAlive = Array("Connection: keep-alive\r\n".utf8)
    private static let requestIDName = Array("X-Request-Id: ".utf8)
}
