import Synchronization
import Testing
@testable import HTTPServer

/// Consumes a streamed body on the loop thread, hashing it, and answers in `finish`.
final class HashingSink: RequestBodySink {
    private var hash = FNV1a()
    private var count = 0
    private var writes = 0

    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPProblem) {
        hash.update(bytes)
        count += bytes.count
        writes += 1
    }

    func finish(_ responder: Responder) {
        responder.respond(.text("\(count) \(hash.value) \(writes)"))
    }

    func abort() {}
}

/// Reports sink aborts to the test that made the sink.
final class AbortFlag: Sendable {
    let value = Atomic<Bool>(false)
}

final class ReportingSink: RequestBodySink {
    let flag: AbortFlag
    init(flag: AbortFlag) { self.flag = flag }
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPProblem) {}
    func finish(_ responder: Responder) { responder.respond(.text("done")) }
    func abort() { flag.value.store(true, ordering: .releasing) }
}

/// Refuses bodies over `limit` bytes from `write`, as an upload route with a quota would.
final class LimitedSink: RequestBodySink {
    let limit: Int
    let flag: AbortFlag
    private var count = 0
    init(limit: Int, flag: AbortFlag) { self.limit = limit; self.flag = flag }
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPProblem) {
        count += bytes.count
        if count > limit { throw HTTPProblem(413, "too_big_for_sink", "over \(limit) bytes") }
    }
    func finish(_ responder: Responder) { responder.respond(.text(String(count))) }
    func abort() { flag.value.store(true, ordering: .releasing) }
}

extension Integration {
    /// Request bodies framed by Content-Length and by chunked coding (RFC 9112 §6, §7.1).
    @Suite struct RequestBodyTests {
        static func echoServer(_ configure: (inout HTTPServerConfiguration) -> Void = { _ in }) throws -> TestServer {
            try TestServer(configure: configure) { t in
                t.add("POST", "/echo") { req, responder in
                    responder.respond(HTTPResponse(headers: HTTPHeaders([("X-Length", String(req.body.count))]),
                                                   body: .bytes(req.body)))
                }
                t.add("PUT", "/upload", .streamed { _ throws(HTTPProblem) in HashingSink() })
            }
        }

        @Test func contentLengthBodyArrivesIntact() throws {
            let server = try Self.echoServer()
            defer { server.shutdown() }
            let client = try server.connect()
            let body = patternBytes(200_000)
            try client.send(Array("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.body == body)
        }

        @Test func chunkedBodyWithExtensionsAndTrailers() throws {
            let server = try Self.echoServer()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5;name=value\r\nhello\r\n"
                + "1 ; spaced=\"quoted; value\"\r\n \r\n"
                + "A;a;b=c\r\n0123456789\r\n"
                + "0;last=1\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "hello 0123456789")
            // The trailers ended the body exactly: the connection serves the next request.
            try client.send(request("POST", "/echo", body: "next"))
            #expect(try client.readResponse().text == "next")
        }

        @Test(arguments: [1, 3, 17])
        func bodySplitAcrossManySmallSends(piece: Int) throws {
            let server = try Self.echoServer()
            defer { server.shutdown() }
            let client = try server.connect()
            let body = patternBytes(piece == 1 ? 250 : 600, seed: UInt64(piece))
            let lengthFramed = Array("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
            try client.sendSlowly(lengthFramed, pieceSize: piece, pauseMicroseconds: piece == 1 ? 200 : 1000)
            #expect(try client.readResponse().body == body)
            let chunkFramed = Array("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
                + chunked(body, sizes: [1, 64, 5, 200], trailers: ["X-T: 1"])
            try client.sendSlowly(chunkFramed, pieceSize: piece, pauseMicroseconds: piece == 1 ? 200 : 1000)
            #expect(try client.readResponse().body == body)
        }

        @Test func streamedRouteReceivesAMultiMegabyteChunkedBodyInPieces() throws {
            let server = try Self.echoServer()
            defer { server.shutdown() }
            let client = try server.connect(timeout: 15)
            let body = patternBytes(6 * 1024 * 1024 + 12_345)
            let wire = Array("PUT /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
                + chunked(body, sizes: [65_536, 1, 100_003, 4096, 777_777])
            // In sends of 256 KiB, so the server reads it over many wake-ups.
            try client.sendSlowly(wire, pieceSize: 256 * 1024, pauseMicroseconds: 0)
            let response = try client.readResponse()
            #expect(response.status == 200)
            let fields = response.text.split(separator: " ")
            #expect(fields.count == 3)
            #expect(fields.first == "\(body.count)"[...])
            #expect(fields.dropFirst().first == "\(FNV1a.hash(body))"[...])
            #expect((Int(fields.last ?? "") ?? 0) > 1, "the sink saw the body in pieces")
        }

        @Test func streamedRouteWithContentLength() throws {
            let server = try Self.echoServer()
            defer { server.shutdown() }
            let client = try server.connect(timeout: 15)
            let body = patternBytes(3 * 1024 * 1024 + 1)
            try client.send(Array("PUT /upload HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
            let response = try client.readResponse()
            #expect(response.text.hasPrefix("\(body.count) \(FNV1a.hash(body)) "))
        }

        @Test func sinkIsAbortedWhenTheClientGoesAwayMidBody() throws {
            let flag = AbortFlag()
            let server = try TestServer { t in
                t.add("PUT", "/upload", .streamed { _ throws(HTTPProblem) in ReportingSink(flag: flag) })
            }
            defer { server.shutdown() }
            do {
                let client = try server.connect()
                try client.send("PUT /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\nonly a little")
                #expect(client.isQuiet(for: 0.1))
            }  // closed here
            #expect(eventually { flag.value.load(ordering: .acquiring) })
        }

        @Test func expectContinueGets100BeforeTheBody() throws {
            let server = try Self.echoServer()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n")
            let interim = try client.readHead()
            #expect(interim.version == "HTTP/1.1")
            #expect(interim.status == 100)
            #expect(interim.headers.isEmpty)
            try client.send("hello world")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "hello world")
            // And a streamed route too.
            try client.send("PUT /upload HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n")
            #expect(try client.readHead().status == 100)
            try client.send(chunked(Array("abc".utf8), sizes: [2]))
            #expect(try client.readResponse().text.hasPrefix("3 "))
        }

        @Test func aSinkMayRefuseTheBodyMidWay() throws {
            let flag = AbortFlag()
            let server = try TestServer { t in
                t.add("PUT", "/limited", .streamed { _ throws(HTTPProblem) in LimitedSink(limit: 100_000, flag: flag) })
            }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("PUT /limited HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            try client.send(chunked(patternBytes(300_000), sizes: [10_000]))
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(try jsonObject(response.body)["code"] as? String == "too_big_for_sink")
            #expect(response.closes)
            #expect(client.waitForClose())
            let aborted = flag.value.load(ordering: .acquiring)
            #expect(aborted, "the sink was told the body will not complete")
        }

        @Test func aGuardDenialComesBeforeTheBody() throws {
            let server = try TestServer { t in
                t.add("POST", "/guarded", guard: { req in
                    req.headers["Authorization"] == "Bearer ok" ? .admitted : .denied(.problem(HTTPProblem(401, "unauthorized", "no token")))
                }) { req, r in r.respond(HTTPResponse(body: .bytes(req.body))) }
            }
            defer { server.shutdown() }
            let denied = try server.connect()
            try denied.send("POST /guarded HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            let response = try denied.readResponse()
            #expect(response.status == 401, "no 100 Continue: the body would be refused")
            #expect(denied.waitForClose())
            let allowed = try server.connect()
            try allowed.send("POST /guarded HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ok\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            #expect(try allowed.readHead().status == 100)
            try allowed.send("hello")
            #expect(try allowed.readResponse().text == "hello")
        }

        @Test func expectContinueForATooLargeBodyGetsOnly413() throws {
            let server = try Self.echoServer { $0.maxBufferedBodyBytes = 1000 }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413, "no 100 Continue for a body that will be refused")
            #expect(response.closes)
            #expect(client.waitForClose())
        }
    }
}
