import Testing
@testable import HTTPServer

/// Feeds a whole request head through the scanner and the parser, as a connection does.
func parseHead(_ text: String, maxRequestLine: Int = 8192, maxHeaderBytes: Int = 32768) throws -> HTTPRequestHead? {
    var scanner = HeadScanner(maxRequestLine: maxRequestLine, maxHeaderBytes: maxHeaderBytes)
    let bytes = Array(text.utf8)
    return try bytes.withUnsafeBytes { buffer -> HTTPRequestHead? in
        guard let length = try scanner.scan(buffer) else { return nil }
        return try RequestHeadParser.parse(UnsafeRawBufferPointer(rebasing: buffer[scanner.leadingBytes..<length]))
    }
}

func refusal(_ text: String) -> HTTPProblem? {
    do {
        _ = try parseHead(text)
        return nil
    } catch {
        return error as? HTTPProblem
    }
}

struct RequestParserTests {
    @Test func parsesASimpleGet() throws {
        let head = try #require(try parseHead("GET /v1/sessions?limit=5 HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n"))
        #expect(head.method == "GET")
        #expect(head.path == "/v1/sessions")
        #expect(head.query == "limit=5")
        #expect(head.versionMinor == 1)
        #expect(head.keepAlive)
        #expect(head.framing == .length(0))
        #expect(head.headers["accept"] == "*/*")
    }

    @Test func trimsOptionalWhitespaceAroundValues() throws {
        let head = try #require(try parseHead("GET / HTTP/1.1\r\nHost: x\r\nX-A: \t padded \t\r\n\r\n"))
        #expect(head.headers["x-a"] == "padded")
    }

    @Test func skipsEmptyLinesBeforeTheRequestLine() throws {
        let head = try #require(try parseHead("\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(head.method == "GET")
    }

    @Test func incompleteHeadWaitsForMore() throws {
        #expect(try parseHead("GET / HTTP/1.1\r\nHost: x\r\n") == nil)
    }

    @Test func connectionSemantics() throws {
        #expect(try #require(try parseHead("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).keepAlive == false)
        #expect(try #require(try parseHead("GET / HTTP/1.0\r\n\r\n")).keepAlive == false)
        #expect(try #require(try parseHead("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")).keepAlive)
        #expect(try #require(try parseHead("GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, Close\r\n\r\n")).keepAlive == false)
    }

    @Test func framing() throws {
        #expect(try #require(try parseHead("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 42\r\n\r\n")).framing == .length(42))
        #expect(try #require(try parseHead("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n")).framing == .chunked)
        // Identical duplicates are one value (RFC 9110 §8.6).
        #expect(try #require(try parseHead("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\nContent-Length: 7\r\n\r\n")).framing == .length(7))
        #expect(try #require(try parseHead("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 7, 7\r\n\r\n")).framing == .length(7))
    }

    @Test func expectContinue() throws {
        #expect(try #require(try parseHead("PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n")).expectsContinue)
        #expect(refusal("PUT / HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n\r\n")?.status == 417)
    }

    @Test func absoluteFormTargetsServeTheirPath() throws {
        let head = try #require(try parseHead("GET http://example.com/healthz?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n"))
        #expect(head.path == "/healthz")
        #expect(head.query == "x=1")
    }

    /// Every refusal RFC 9112 asks for, with the status it must get.
    static let refusals: [(String, String, Int)] = [
        ("CL and TE together", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("TE gzip", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
        ("TE gzip, chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400),
        ("TE chunked twice", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("TE identity", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n", 400),
        ("TE on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("CL +5", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n", 400),
        ("CL 0x10", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x10\r\n\r\n", 400),
        ("CL 1 0", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1 0\r\n\r\n", 400),
        ("CL negative", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
        ("CL empty", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n", 400),
        ("CL huge", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
        ("differing CL", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
        ("differing CL list", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\n", 400),
        ("space before colon", "GET / HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n", 400),
        ("tab before colon", "GET / HTTP/1.1\r\nHost: x\r\nX-A\t: b\r\n\r\n", 400),
        ("obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n", 400),
        ("obs-fold with tab", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\r\n\tc\r\n\r\n", 400),
        ("whitespace before first field", "GET / HTTP/1.1\r\n Host: x\r\n\r\n", 400),
        ("bare CR in value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\rc\r\n\r\n", 400),
        ("bare CR ending a line", "GET / HTTP/1.1\rHost: x\r\n\r\n", 400),
        ("bare LF", "GET / HTTP/1.1\nHost: x\r\n\r\n", 400),
        ("NUL in value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\u{0}c\r\n\r\n", 400),
        ("control in value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\u{1}c\r\n\r\n", 400),
        ("DEL in value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\u{7F}c\r\n\r\n", 400),
        ("missing Host", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", 400),
        ("duplicate Host", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("invalid Host", "GET / HTTP/1.1\r\nHost: a b/c\r\n\r\n", 400),
        ("empty field name", "GET / HTTP/1.1\r\nHost: x\r\n: b\r\n\r\n", 400),
        ("field without colon", "GET / HTTP/1.1\r\nHost: x\r\nnocolon\r\n\r\n", 400),
        ("bad char in name", "GET / HTTP/1.1\r\nHost: x\r\nX(A): b\r\n\r\n", 400),
        ("two spaces in request line", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("missing version", "GET /\r\nHost: x\r\n\r\n", 400),
        ("lowercase version", "GET / http/1.1\r\nHost: x\r\n\r\n", 400),
        ("relative target", "GET foo HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("control in target", "GET /a\u{1}b HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("bad method char", "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("HTTP/2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        ("HTTP/0.9 style", "GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505),
        ("asterisk for GET", "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ]

    @Test(arguments: refusals)
    func refuses(_ vector: (String, String, Int)) {
        let (name, text, status) = vector
        let problem = refusal(text)
        #expect(problem?.status == status, "\(name): got \(String(describing: problem))")
    }

    @Test func requestLineLimitIs414() {
        let long = "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: x\r\n\r\n"
        #expect(refusal(long)?.status == 414)
        // Also while the line is still arriving, before its end is seen.
        var scanner = HeadScanner(maxRequestLine: 8192, maxHeaderBytes: 32768)
        let partial = Array(("GET /" + String(repeating: "a", count: 9000)).utf8)
        #expect(throws: HTTPProblem.self) { try partial.withUnsafeBytes { b in _ = try scanner.scan(b) } }
    }

    @Test func headerSectionLimitIs431() {
        let many = (0..<100).map { "X-H\($0): " + String(repeating: "v", count: 400) + "\r\n" }.joined()
        #expect(refusal("GET / HTTP/1.1\r\nHost: x\r\n" + many + "\r\n")?.status == 431)
        var scanner = HeadScanner(maxRequestLine: 8192, maxHeaderBytes: 1024)
        let partial = Array(("GET / HTTP/1.1\r\nX-A: " + String(repeating: "v", count: 2000)).utf8)
        #expect(throws: HTTPProblem(431, "header_fields_too_large", "the header section is larger than 1024 bytes")) {
            try partial.withUnsafeBytes { b in _ = try scanner.scan(b) }
        }
    }

    @Test func scanningResumesAcrossPieces() throws {
        var scanner = HeadScanner(maxRequestLine: 8192, maxHeaderBytes: 32768)
        let text = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        var found: Int?
        for end in 1...text.count {
            found = try Array(text[0..<end]).withUnsafeBytes { b in try scanner.scan(b) }
            if found != nil { #expect(end == text.count) }
        }
        #expect(found == text.count)
    }
}
