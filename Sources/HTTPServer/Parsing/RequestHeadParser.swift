/// Parses a complete request head (request-line, header fields, the empty line) per RFC 9112,
/// refusing anything whose framing could be read two ways: that ambiguity is what request
/// smuggling exploits, so every refusal here closes the connection.
public enum RequestHeadParser {
    /// `bytes` starts at the request-line and ends after the empty line; every line ends in CRLF
    /// (the `HeadScanner` checked that).
    ///
    /// Works on the bytes: fields the server acts on (framing, Host, Connection, Expect) are
    /// recognised by comparing bytes ignoring ASCII case, and a `String` is made once per name and
    /// value, for the handlers. Lowercased copies and `Character`-wise scans cost more than the
    /// rest of a small request did.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(HTTPProblem) -> HTTPRequestHead {
        var lines = LineCursor(bytes: bytes)
        guard let requestLine = lines.next() else { throw .bad("empty request") }
        let (method, targetRange, minor) = try parseRequestLine(bytes, requestLine)
        let target = string(bytes, targetRange)
        let questionMark = targetRange.firstIndex { bytes[$0] == 0x3F }.map { $0 - targetRange.lowerBound }
        let (path, query) = try splitTarget(target, questionMark: questionMark, method: method)

        var headers = HTTPHeaders(capacity: 8)
        var framing = FramingFields()
        var close = false, keepAliveToken = false
        var expectsContinue = false
        while let line = lines.next(), !line.isEmpty {
            let (name, value) = try parseField(bytes, line)
            switch name.count {
            case 4 where ASCII.equalsIgnoringCase(bytes, name, "host"):
                framing.hostCount += 1
                try checkHost(bytes, value)
            case 6 where ASCII.equalsIgnoringCase(bytes, name, "expect"):
                guard ASCII.equalsIgnoringCase(bytes, value, "100-continue") else {
                    throw HTTPProblem(417, "expectation_failed", "only Expect: 100-continue is supported")
                }
                expectsContinue = minor >= 1
            case 10 where ASCII.equalsIgnoringCase(bytes, name, "connection"):
                for token in ASCII.listMembers(bytes, value) {
                    close = close || ASCII.equalsIgnoringCase(bytes, token, "close")
                    keepAliveToken = keepAliveToken || ASCII.equalsIgnoringCase(bytes, token, "keep-alive")
                }
            case 14 where ASCII.equalsIgnoringCase(bytes, name, "content-length"):
                try framing.addContentLength(bytes, value)
            case 17 where ASCII.equalsIgnoringCase(bytes, name, "transfer-encoding"):
                framing.addTransferEncoding(bytes, value)
            default: break
            }
            headers.add(string(bytes, name), string(bytes, value))
        }

        if minor >= 1 && framing.hostCount != 1 {
            throw .bad(framing.hostCount == 0 ? "HTTP/1.1 request without Host" : "more than one Host header")
        }
        return HTTPRequestHead(
            method: method, target: target, path: path, query: query, versionMinor: minor,
            headers: headers, keepAlive: minor >= 1 ? !close : keepAliveToken, framing: try framing.resolve(bytes, minor: minor),
            expectsContinue: expectsContinue)
    }

    // MARK: request-line (RFC 9112 §3)

    private static func parseRequestLine(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>)
        throws(HTTPProblem) -> (String, Range<Int>, Int)
    {
        // method SP request-target SP HTTP-version: exactly two single spaces, no other whitespace.
        var spaces = (0, 0), count = 0
        for i in line where bytes[i] == 0x20 {
            count += 1
            if count == 1 { spaces.0 = i } else if count == 2 { spaces.1 = i }
        }
        guard count == 2 else { throw .bad("malformed request line") }
        let methodRange = line.lowerBound..<spaces.0
        let target = spaces.0 + 1..<spaces.1
        let version = spaces.1 + 1..<line.upperBound
        guard !methodRange.isEmpty, !target.isEmpty, !version.isEmpty else { throw .bad("malformed request line") }
        guard methodRange.allSatisfy({ CharacterClass.isTokenChar(bytes[$0]) }) else {
            throw .bad("malformed method")
        }
        guard target.allSatisfy({ bytes[$0] > 0x20 && bytes[$0] < 0x7F }) else {
            throw .bad("malformed request target")
        }
        let v = version.lowerBound
        guard version.count == 8, bytes[v] == 0x48, bytes[v + 1] == 0x54, bytes[v + 2] == 0x54, bytes[v + 3] == 0x50,
              bytes[v + 4] == 0x2F, CharacterClass.isDigit(bytes[v + 5]), bytes[v + 6] == 0x2E,
              CharacterClass.isDigit(bytes[v + 7])
        else { throw .bad("malformed HTTP version") }  // "HTTP/" DIGIT "." DIGIT
        guard bytes[v + 5] == 0x31 else {
            throw HTTPProblem(505, "http_version_not_supported", "only HTTP/1.0 and HTTP/1.1 are served")
        }
        return (string(bytes, methodRange), target, Int(bytes[v + 7] - 0x30))
    }

    /// The path and query of the target, as slices of it. The target is ASCII (checked above), so
    /// every UTF-8 offset is a character boundary; `questionMark` is the offset of its first `?`,
    /// which starts the query in either form (an authority cannot hold a `?`).
    private static func splitTarget(_ target: String, questionMark: Int?, method: String) throws(HTTPProblem)
        -> (Substring, Substring?)
    {
        let utf8 = target.utf8
        let end = questionMark.map { utf8.index(utf8.startIndex, offsetBy: $0) } ?? utf8.endIndex
        let query = questionMark.map { _ in target[utf8.index(after: end)...] }
        var path = utf8.startIndex
        if target.hasPrefix("http://") || target.hasPrefix("https://") {
            // absolute-form (RFC 9112 §3.2.2): serve its path; the authority is not ours to check.
            let authority = utf8.index(utf8.firstIndex(of: 0x3A)!, offsetBy: 3)
            guard let slash = utf8[authority..<end].firstIndex(of: 0x2F) else { return ("/", query) }
            path = slash
        } else if target == "*" {
            guard method == "OPTIONS" else { throw .bad("asterisk-form is only for OPTIONS") }
            return ("*", nil)
        } else if utf8.first != 0x2F {
            throw .bad("request target must be an absolute path")
        }
        return (target[path..<end], query)
    }

    // MARK: header fields (RFC 9112 §5)

    /// The name and the value (without surrounding whitespace) of a field line.
    private static func parseField(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>)
        throws(HTTPProblem) -> (name: Range<Int>, value: Range<Int>)
    {
        let first = bytes[line.lowerBound]
        if first == 0x20 || first == 0x09 {
            throw .bad("obsolete line folding (obs-fold) is not accepted")
        }
        var colon = line.lowerBound
        while colon < line.upperBound && bytes[colon] != 0x3A {
            let c = bytes[colon]
            if c == 0x20 || c == 0x09 { throw .bad("whitespace between a field name and its colon") }
            guard CharacterClass.isTokenChar(c) else { throw .bad("invalid character in a field name") }
            colon += 1
        }
        guard colon < line.upperBound, colon > line.lowerBound else { throw .bad("malformed header field") }
        let value = ASCII.trimmed(bytes, colon + 1..<line.upperBound)
        for i in value where !CharacterClass.isFieldValueChar(bytes[i]) {
            throw .bad("invalid character (NUL, CR, LF or control) in a field value")
        }
        return (line.lowerBound..<colon, value)
    }

    /// RFC 9112 §3.2: a Host with an invalid value is a 400. uri-host [":" port], where uri-host is
    /// reg-name, IPv4 or an IP literal in brackets.
    private static func checkHost(_ bytes: UnsafeRawBufferPointer, _ value: Range<Int>) throws(HTTPProblem) {
        for i in value {
            let c = bytes[i]
            guard CharacterClass.isUnreserved(c) || CharacterClass.isSubDelim(c) || c == 0x3A || c == 0x5B || c == 0x5D
                || c == 0x25
            else { throw .bad("invalid Host header") }
        }
    }

    static func string(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }
}

/// Walks CRLF-terminated lines, yielding each line's range without its CRLF.
private struct LineCursor {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    mutating func next() -> Range<Int>? {
        var i = position
        while i + 1 < bytes.count {
            if bytes[i] == 0x0D && bytes[i + 1] == 0x0A {
                let line = position..<i
                position = i + 2
                return line
            }
            i += 1
        }
        return nil
    }
}
