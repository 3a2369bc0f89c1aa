/// Finds where a request head ends in bytes that arrive in pieces, checking line endings and size
/// limits as it goes so a client cannot make the server buffer more than the limits allow.
///
/// RFC 9112 §2.2: lines end in CRLF; a bare CR is refused, and so (strictly) is a bare LF. Empty
/// lines before the request-line are skipped, as the RFC asks a server to tolerate at least one.
public struct HeadScanner: Sendable {
    public let maxRequestLine: Int
    public let maxHeaderBytes: Int
    /// Most header field lines: within the byte limit a client could send thousands of tiny
    /// fields, each a dictionary entry for the parser to build (Apache's LimitRequestFields, 100).
    public let maxHeaderFields: Int

    private var position = 0
    private var lineStart = 0
    /// Where the request-line starts, once a non-empty line was seen.
    private var requestLineStart: Int?
    private var requestLineEnd: Int?
    private var fieldCount = 0

    public init(maxRequestLine: Int, maxHeaderBytes: Int, maxHeaderFields: Int = 100) {
        self.maxRequestLine = maxRequestLine
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderFields = maxHeaderFields
    }

    /// Restarts for the next request.
    public mutating func reset() {
        position = 0
        lineStart = 0
        requestLineStart = nil
        requestLineEnd = nil
        fieldCount = 0
    }

    /// Bytes skipped before the request-line (empty lines).
    public var leadingBytes: Int { requestLineStart ?? position }

    /// Scans `bytes` (the whole buffered input, of which earlier calls saw a prefix). Returns the
    /// length of the head, terminating empty line included, once it is complete.
    public mutating func scan(_ bytes: UnsafeRawBufferPointer) throws(HTTPProblem) -> Int? {
        while position < bytes.count {
            let byte = bytes[position]
            if byte == 0x0D {
                guard position + 1 < bytes.count else { return try checkLimits() }
                guard bytes[position + 1] == 0x0A else { throw .bad("bare CR in request head") }
                position += 2
                if let done = try endLine(at: position - 2) { return done }
                continue
            }
            if byte == 0x0A { throw .bad("bare LF in request head; lines must end in CRLF") }
            position += 1
        }
        return try checkLimits()
    }

    /// Handles the line ending at `end` (the CR); returns the head length when it was the empty
    /// line that closes the header section.
    private mutating func endLine(at end: Int) throws(HTTPProblem) -> Int? {
        defer { lineStart = position }
        guard let start = requestLineStart else {
            if end == lineStart {
                // An empty line before any request-line: tolerated, but not without bound.
                guard position <= 64 else { throw .bad("too many empty lines before the request") }
                return nil
            }
            requestLineStart = lineStart
            requestLineEnd = end
            guard end - lineStart <= maxRequestLine else { throw uriTooLong }
            return nil
        }
        if end == lineStart { return position }
        guard position - (requestLineEnd ?? start) <= maxHeaderBytes else { throw headersTooLarge }
        fieldCount += 1
        guard fieldCount <= maxHeaderFields else {
            throw HTTPProblem(431, "header_fields_too_large", "the request has more than \(maxHeaderFields) header fields")
        }
        return nil
    }

    private func checkLimits() throws(HTTPProblem) -> Int? {
        if let lineEnd = requestLineEnd {
            if position - lineEnd > maxHeaderBytes { throw headersTooLarge }
        } else if position - lineStart > maxRequestLine {
            throw uriTooLong
        }
        return nil
    }

    private var uriTooLong: HTTPProblem {
        HTTPProblem(414, "uri_too_long", "the request line is longer than \(maxRequestLine) bytes")
    }

    private var headersTooLarge: HTTPProblem {
        HTTPProblem(431, "header_fields_too_large", "the header section is larger than \(maxHeaderBytes) bytes")
    }
}
