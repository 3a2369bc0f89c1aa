import Testing
@testable import HTTPServer

extension Integration {
    /// Every configured limit answers with its status (nginx-like), and the refused connection closes.
    @Suite struct LimitsTests {
        static func server(_ configure: (inout HTTPServerConfiguration) -> Void) throws -> TestServer {
            try TestServer(configure: configure) { t in
                t.add("GET", "/x") { _, r in r.respond(.text("x")) }
                t.add("POST", "/echo") { req, r in r.respond(HTTPResponse(body: .bytes(req.body))) }
            }
        }

        /// Reads the refusal: the status, a problem document, `Connection: close`, then EOF.
        static func expectRefusal(_ client: RawClient, status: Int, code: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) throws
        {
            let response = try client.readResponse()
            #expect(response.status == status, sourceLocation: sourceLocation)
            #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
            #expect(try jsonObject(response.body)["code"] as? String == code, sourceLocation: sourceLocation)
            #expect(response.closes, sourceLocation: sourceLocation)
            #expect(client.waitForClose(), "the connection closes after the refusal", sourceLocation: sourceLocation)
        }

        @Test func requestLineOverTheLimitIs414() throws {
            let server = try Self.server { $0.maxRequestLineBytes = 256 }
            defer { server.shutdown() }
            // Within the limit is fine.
            let ok = try server.connect()
            try ok.send(request("GET", "/x?" + String(repeating: "a", count: 200)))
            #expect(try ok.readResponse().status == 200)
            // The whole line at once…
            let client = try server.connect()
            try client.send(request("GET", "/x?" + String(repeating: "a", count: 1000)))
            try Self.expectRefusal(client, status: 414, code: "uri_too_long")
            // …or a line that never ends: refused once it passes the limit, not buffered on.
            let endless = try server.connect()
            try endless.send("GET /x?" + String(repeating: "b", count: 2000))
            try Self.expectRefusal(endless, status: 414, code: "uri_too_long")
        }

        @Test func headerSectionOverTheLimitIs431() throws {
            let server = try Self.server { $0.maxHeaderBytes = 1024 }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/x", headers: ["X-Big: " + String(repeating: "v", count: 2000)]))
            try Self.expectRefusal(client, status: 431, code: "header_fields_too_large")
            let many = try server.connect()
            try many.send(request("GET", "/x", headers: (0..<100).map { "X-H\($0): some value" }))
            try Self.expectRefusal(many, status: 431, code: "header_fields_too_large")
        }

        /// Within the byte limit, a head of many tiny fields is still refused past the field count.
        @Test func headerFieldsOverTheCountAre431() throws {
            let server = try Self.server { $0.maxHeaderFields = 20 }
            defer { server.shutdown() }
            let fine = try server.connect()
            try fine.send(request("GET", "/x", headers: (0..<19).map { "a\($0): b" }))  // Host makes 20
            #expect(try fine.readResponse().status == 200)
            let many = try server.connect()
            try many.send(request("GET", "/x", headers: (0..<20).map { "a\($0): b" }))
            try Self.expectRefusal(many, status: 431, code: "header_fields_too_large")
        }

        @Test func bufferedBodyOverTheLimitWithContentLengthIs413() throws {
            let server = try Self.server { $0.maxBufferedBodyBytes = 1000 }
            defer { server.shutdown() }
            let exact = try server.connect()
            try exact.send(request("POST", "/echo", body: String(repeating: "e", count: 1000)))
            #expect(try exact.readResponse().body.count == 1000)
            // Refused from the head alone: the client need not send the body.
            let client = try server.connect()
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n")
            try Self.expectRefusal(client, status: 413, code: "content_too_large")
        }

        @Test func bufferedChunkedBodyOverTheLimitIs413MidWay() throws {
            let server = try Self.server { $0.maxBufferedBodyBytes = 1000 }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            // 300-byte chunks: the fourth passes the limit; the client is still sending when refused.
            let chunk = "12C\r\n" + String(repeating: "c", count: 300) + "\r\n"
            for _ in 0..<4 { try client.send(chunk) }
            try Self.expectRefusal(client, status: 413, code: "content_too_large")
        }

        @Test func theNthRequestOfAConnectionCarriesConnectionClose() throws {
            let server = try Self.server { $0.maxRequestsPerConnection = 3 }
            defer { server.shutdown() }
            let client = try server.connect()
            for i in 1...3 {
                try client.send(request("GET", "/x"))
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.closes == (i == 3))
            }
            #expect(client.waitForClose())
        }

        @Test func connectionsOverTheLimitGet503() throws {
            let server = try Self.server { $0.maxConnections = 2 }
            defer { server.shutdown() }
            var held: [RawClient] = []
            for _ in 0..<2 {
                let c = try server.connect()
                try c.send(request("GET", "/x"))
                #expect(try c.readResponse().status == 200)
                held.append(c)
            }
            let extra = try server.connect()
            let response = try extra.readResponse()
            #expect(response.status == 503)
            #expect(response.closes)
            #expect(isIMFFixdate(response.header("Date")))
            #expect(try jsonObject(response.body)["code"] as? String == "too_many_connections")
            #expect(extra.waitForClose())
            // The held connections are unaffected, and a freed slot is usable again.
            try held[0].send(request("GET", "/x"))
            #expect(try held[0].readResponse().status == 200)
            held.removeLast()
            #expect(eventually { server.server.openConnections == 1 })
            let again = try server.connect()
            try again.send(request("GET", "/x"))
            #expect(try again.readResponse().status == 200)
        }
    }
}
