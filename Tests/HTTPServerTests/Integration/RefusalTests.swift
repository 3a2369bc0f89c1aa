import Testing
@testable import HTTPServer

extension Integration {
    /// Requests whose framing could be read two ways are refused with 400 and the connection
    /// closed (RFC 9112 §6.1, §6.3, §7.1).
    @Suite struct RefusalTests {
        static func server() throws -> TestServer {
            try TestServer { t in
                t.add("GET", "/x") { _, r in r.respond(.text("x")) }
                t.add("POST", "/echo") { req, r in r.respond(HTTPResponse(body: .bytes(req.body))) }
                t.add("PUT", "/upload", .streamed { _ throws(HTTPProblem) in HashingSink() })
            }
        }

        static func expect400AndClose(_ client: RawClient, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let response = try client.readResponse()
            #expect(response.status == 400, sourceLocation: sourceLocation)
            #expect(response.closes, sourceLocation: sourceLocation)
            #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
            #expect(try jsonObject(response.body)["code"] as? String == "bad_request", sourceLocation: sourceLocation)
            #expect(client.waitForClose(), "EOF after the refusal", sourceLocation: sourceLocation)
        }

        @Test func contentLengthWithTransferEncoding() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            // The smuggling shape: a proxy reading Content-Length would see a second request.
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "0\r\n\r\nGET /x HTTP/1.1\r\nHost: t\r\n\r\n")
            try Self.expect400AndClose(client)
            #expect(client.pending.isEmpty, "the smuggled request was not answered")
        }

        @Test(arguments: ["zz", "-1", "0x5", "5 5x", "ffffffffffffffff"])
        func malformedChunkSizeMidBody(size: String) throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n\(size)\r\nabcde\r\n0\r\n\r\n")
            try Self.expect400AndClose(client)
        }

        @Test func malformedChunkSizeOnAStreamedRoute() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("PUT /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nXYZ\r\n")
            try Self.expect400AndClose(client)
        }

        @Test func chunkDataLongerThanItsSize() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n")
            try Self.expect400AndClose(client)
        }

        static let malformedHeads: [String] = [
            "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: +5\r\n\r\nhello",
            "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0x10\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1 0\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
            "GET /x HTTP/1.1\r\nHost : t\r\n\r\n",
            "GET /x HTTP/1.1\r\nHost: t\r\nX-Folded: a\r\n b\r\n\r\n",
            "GET /x HTTP/1.1\r\nHost: t\r\nX-Bare: a\rb\r\n\r\n",
            "GET /x HTTP/1.1\r\nHost: t\r\nX-Nul: a\u{0}b\r\n\r\n",
            "GET /x HTTP/1.1\r\n\r\n",
            "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            "GET /x HTTP/1.1\nHost: t\n\n",
        ]

        @Test(arguments: malformedHeads)
        func malformedHeadsAreRefused(head: String) throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(head)
            try Self.expect400AndClose(client)
        }

        @Test func aRefusalAfterGoodRequestsStillAnswersThemFirst() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/x") + request("GET", "/x") + "GET /x HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(try client.readResponse().status == 200)
            try Self.expect400AndClose(client)
        }
    }
}
