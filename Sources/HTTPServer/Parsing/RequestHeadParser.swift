/// Parses a complete request head (request-line, header fields, the empty line) per RFC 9112,
/// refusing anything whose framing could be read two ways: that ambiguity is what request
/// smuggling exploits, so every refusal here closes the connection.
public enum RequestHeadParser {
    /// `bytes` starts at the request-line and ends after the empty line; every line ends in CRLF
    /// (the `HeadScanner` checked that).
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(HTTPProblem) -> HTTPRequestHead {
        var lines = LineCursor(bytes: bytes)
        guard let requestLine = lines.next() else { throw .bad("empty request") }
        let (method, target, minor) = try parseRequestLine(bytes, requestLine)
        let (path, query) = try splitTarget(target, method: method)

        var headers = HTTPHeaders()
        var framing = FramingFields()
        var connectionTokens: [String] = []
        var expectsContinue = false
        while let line = lines.next(), !line.isEmpty {
            let (name, value) = try parseField(bytes, line)
            switch name.lowercased() {
            case "content-length": try framing.addContentLength(value)
            case "transfer-encoding": framing.transferEncodings.append(value)
            case "host": framing.hostCount += 1; try checkHost(value)
            case "connection": connectionTokens += tokens(value)
            case "expect":
                guard value.lowercased() == "100-continue" else {
                    throw HTTPProblem(417, "expectation_failed", "only Expect: 100-continue is supported")
                }
                expectsContinue = minor >= 1
            default: break
            }
            headers.add(name, value)
        }

        if minor >= 1 && framing.hostCount != 1 {
            throw .bad(framing.hostCount == 0 ? "HTTP/1.1 request without Host" : "more than one Host header")
        }
        let keepAlive = minor >= 1 ? !connectionTokens.contains("close") : connectionTokens.contains("keep-alive")
        return HTTPRequestHead(
            method: method, target: target, path: path, query: query, versionMinor: minor,
            headers: headers, keepAlive: keepAlive, framing: try framing.resolve(minor: minor),
            expectsContinue: expectsContinue)
    }

    // MARK: request-line (RFC 9112 §3)

    private static func parseRequestLine(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>)
        throws(HTTPProblem) -> (String, String, Int)
    {
        // method SP request-target SP HTTP-version: exactly single spaces, no other whitespace.
        var parts: [Range<Int>] = []
        var start = line.lowerBound
        for i in line where bytes[i] == 0x20 {
            parts.append(start..<i)
            start = i + 1
        }
        parts.append(start..<line.upperBound)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            throw .bad("malformed request line")
        }
        guard parts[0].allSatisfy({ CharacterClass.isTokenChar(bytes[$0]) }) else {
            throw .bad("malformed method")
        }
        guard parts[1].allSatisfy({ bytes[$0] > 0x20 && bytes[$0] < 0x7F }) else {
            throw .bad("malformed request target")
        }
        let version = parts[2]
        guard version.count == 8, string(bytes, version.lowerBound..<version.lowerBound + 5) == "HTTP/",
              CharacterClass.isDigit(bytes[version.lowerBound + 5]), bytes[version.lowerBound + 6] == 0x2E,
              CharacterClass.isDigit(bytes[version.lowerBound + 7])
        else { throw .bad("malformed HTTP version") }
        let major = Int(bytes[version.lowerBound + 5] - 0x30)
        let minor = Int(bytes[version.lowerBound + 7] - 0x30)
        guard major == 1 else {
            throw HTTPProblem(505, "http_version_not_supported", "only HTTP/1.0 and HTTP/1.1 are served")
        }
        return (string(bytes, parts[0]), string(bytes, parts[1]), minor)
    }

    private static func splitTarget(_ target: String, method: String) throws(HTTPProblem)
        -> (Substring, Substring?)
    {
        var rest = Substring(target)
        if target.hasPrefix("http://") || target.hasPrefix("https://") {
            // absolute-form (RFC 9112 §3.2.2): serve its path; the authority is not ours to check.
            let afterScheme = rest[rest.index(rest.firstIndex(of: ":")!, offsetBy: 3)...]
            rest = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }).map { afterScheme[$0...] } ?? "/"
            if rest.first == "?" { rest = "/" + rest }
        } else if target == "*" {
            guard method == "OPTIONS" else { throw .bad("asterisk-form is only for OPTIONS") }
            return ("*", nil)
        } else if !target.hasPrefix("/") {
            throw .bad("request target must be an absolute path")
        }
        guard let q = rest.firstIndex(of: "?") else { return (rest, nil) }
        return (rest[..<q], rest[rest.index(after: q)...])
    }

    // MARK: header fields (RFC 9112 §5)

    private static func parseField(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>)
        throws(HTTPProblem) -> (String, String)
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
        var valueStart = colon + 1
        var valueEnd = line.upperBound
        while valueStart < valueEnd && CharacterClass.isWhitespace(bytes[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart && CharacterClass.isWhitespace(bytes[valueEnd - 1]) { valueEnd -= 1 }
        for i in valueStart..<valueEnd where !CharacterClass.isFieldValueChar(bytes[i]) {
            throw .bad("invalid character (NUL, CR, LF or control) in a field value")
        }
        return (string(bytes, line.lowerBound..<colon), string(bytes, valueStart..<valueEnd))
    }

    /// RFC 9112 §3.2: a Host with an invalid value is a 400. uri-host [":" port], where uri-host is
    /// reg-name, IPv4 or an IP literal in brackets.
    private static func checkHost(_ value: String) throws(HTTPProblem) {
        for c in value.utf8 where !(CharacterClass.isUnreserved(c) || CharacterClass.isSubDelim(c)
            || c == 0x3A || c == 0x5B || c == 0x5D || c == 0x25)
        {
            throw .bad("invalid Host header")
        }
    }

    private static func tokens(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingWhitespace().lowercased() }
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

extension StringProtocol {
    func trimmingWhitespace() -> String {
        let s = String(self)
        let u = s.utf8
        var start = u.startIndex, end = u.endIndex
        while start < end, CharacterClass.isWhitespace(u[start]) { start = u.index(after: start) }
        while end > start, CharacterClass.isWhitespace(u[u.index(before: end)]) { end = u.index(before: end) }
        return String(s[start..<end])
    }
}
