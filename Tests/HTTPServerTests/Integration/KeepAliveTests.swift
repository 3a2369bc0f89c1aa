import Synchronization
import Testing
@testable import HTTPServer

extension Integration {
    /// Persistent connections (RFC 9112 §9.3) and pipelining (§9.3.2) over a real socket.
    @Suite struct KeepAliveTests {
        @Test func manySequentialRequestsShareOneConnection() throws {
            let counter = Atomic<Int>(0)
            let server = try TestServer { t in
                t.add("GET", "/count") { _, responder in
                    let n = counter.add(1, ordering: .relaxed).newValue
                    responder.respond(.text(String(n)))
                }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            var ids = Set<String>()
            for i in 1...150 {
                try client.send(request("GET", "/count"))
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.text == String(i))
                #expect(response.header("Connection") == nil, "HTTP/1.1 keeps the connection by default")
                #expect(isIMFFixdate(response.header("Date")))
                ids.insert(response.header("X-Request-Id") ?? "")
            }
            #expect(ids.count == 150, "every request gets its own id")
            // Still open: nothing (no EOF) arrives unasked, and one more request is served.
            #expect(client.isQuiet(for: 0.1))
            #expect(server.server.openConnections == 1)
            try client.send(request("GET", "/count"))
            #expect(try client.readResponse().text == "151")
        }

        @Test func pipelinedRequestsAreAnsweredInOrder() throws {
            let server = try TestServer { t in
                t.add("GET", "/p/{n}") { req, responder in
                    let n = Int(req.parameters["n"]!)!
                    let response = HTTPResponse.text("response \(n)", headers: [("X-N", String(n))])
                    switch n % 3 {
                    // The first answers last of all if ordering were by completion: 300 ms, elsewhere.
                    case 0 where n == 0: later(0.3) { responder.respond(response) }
                    case 0: later(0.01) { responder.respond(response) }
                    case 1: responder.respond(response)
                    default: later(0.001) { responder.respond(response) }
                    }
                }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            var all = ""
            for n in 0..<20 { all += request("GET", "/p/\(n)", headers: ["X-Seq: \(n)"]) }
            try client.send(all)  // one send(): the server sees them all at once
            for n in 0..<20 {
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.header("X-N") == String(n))
                #expect(response.text == "response \(n)")
            }
            #expect(client.isQuiet(for: 0.1), "exactly 20 responses")
        }

        @Test func manyPipelinedRequestsInOneSend() throws {
            let server = try TestServer { t in t.add("GET", "/n/{n}") { req, r in r.respond(.text(req.parameters["n"]!)) } }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send((0..<500).map { request("GET", "/n/\($0)") }.joined())
            for n in 0..<500 {
                #expect(try client.readResponse().text == String(n))
            }
        }

        @Test func closedConnectionsAreReleased() throws {
            let server = try TestServer { t in
                t.add("GET", "/x") { _, r in r.respond(.text("x")) }
                t.add("POST", "/echo") { req, r in r.respond(HTTPResponse(body: .bytes(req.body))) }
            }
            defer { server.shutdown() }
            do {
                var clients: [RawClient] = []
                for i in 0..<40 {
                    let c = try server.connect()
                    switch i % 4 {
                    case 0: try c.send(request("GET", "/x")); _ = try c.readResponse()
                    case 1: try c.send("GET /x HT")  // half a head
                    case 2: try c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab")  // half a body
                    default: try c.send(request("GET", "/nowhere", body: "unread")); _ = try c.readResponse()  // lingering
                    }
                    clients.append(c)
                }
                #expect(eventually { server.server.openConnections == 40 })
            }
            #expect(eventually { server.server.openConnections == 0 }, "every Connection is released when its client leaves")
        }

        @Test func pipelinedRequestsWithBodiesStayFramed() throws {
            let server = try TestServer { t in
                t.add("POST", "/echo") { req, responder in responder.respond(HTTPResponse(body: .bytes(req.body))) }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            var all: [UInt8] = []
            var bodies: [[UInt8]] = []
            for n in 0..<10 {
                let body = patternBytes(100 * n + 1, seed: UInt64(n + 1))
                bodies.append(body)
                if n % 2 == 0 {
                    all += Array("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
                    // RFC 9112 §2.2: a stray CRLF after a body (old clients send one) is skipped.
                    if n % 4 == 0 { all += Array("\r\n".utf8) }
                } else {
                    all += Array("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
                        + chunked(body, sizes: [7, 300, 1])
                }
            }
            try client.send(all)
            for body in bodies {
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.body == body)
            }
        }

        @Test func pipelinedRequestsAfterConnectionCloseAreNotAnswered() throws {
            let server = try TestServer { t in t.add("GET", "/x") { _, r in r.respond(.text("x")) } }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/x", headers: ["Connection: close"]) + request("GET", "/x"))
            let response = try client.readResponse()
            #expect(response.text == "x")
            #expect(response.closes)
            #expect(client.waitForClose())
            #expect(client.pending.isEmpty, "exactly one response")
        }

        @Test func clientConnectionCloseIsHonoured() throws {
            let server = try TestServer { t in t.add("GET", "/x") { _, r in r.respond(.text("x")) } }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/x", headers: ["Connection: close"]))
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.closes)
            #expect(client.waitForClose())
        }

        @Test func http10GetsAnHTTP10ResponseAndClose() throws {
            let server = try TestServer { t in t.add("GET", "/x") { _, r in r.respond(.text("old")) } }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("GET /x HTTP/1.0\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.version == "HTTP/1.0")
            #expect(response.status == 200)
            #expect(response.text == "old")
            #expect(response.closes)
            #expect(client.waitForClose())
        }

        @Test func http10KeepAliveIsKeptAlive() throws {
            let server = try TestServer { t in t.add("GET", "/x") { _, r in r.respond(.text("old")) } }
            defer { server.shutdown() }
            let client = try server.connect()
            for _ in 0..<3 {
                try client.send("GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.version == "HTTP/1.0")
                #expect(response.header("Connection")?.lowercased() == "keep-alive")
                #expect(response.text == "old")
            }
        }
    }
}
