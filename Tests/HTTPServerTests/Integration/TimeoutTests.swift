import Glibc
import Testing
@testable import HTTPServer

extension Integration {
    /// Header, body and idle timeouts. The server sweeps deadlines every 0.5 s, so a 0.5 s timeout
    /// fires within about 1 s; the bounds below are generous on purpose.
    @Suite struct TimeoutTests {
        static func server(_ configure: (inout HTTPServerConfiguration) -> Void) throws -> TestServer {
            try TestServer(configure: configure) { t in
                t.add("GET", "/x") { _, r in r.respond(.text("x")) }
                t.add("POST", "/echo") { req, r in r.respond(HTTPResponse(body: .bytes(req.body))) }
            }
        }

        @Test func aHeadThatStallsGets408() throws {
            let server = try Self.server { $0.headerTimeout = 0.5 }
            defer { server.shutdown() }
            let client = try server.connect()
            let start = now()
            try client.send("GET /x HTTP/1.1\r\nHost: t\r\nX-Partial: ")
            let response = try client.readResponse()
            #expect(response.status == 408)
            #expect(try jsonObject(response.body)["code"] as? String == "request_timeout")
            #expect(response.closes)
            #expect(now() - start >= 0.3, "not before the timeout")
            #expect(client.waitForClose())
        }

        @Test func aHeadTrickledSlowlyStillTimesOut() throws {
            // Slowloris: each byte arrives in time, the head as a whole does not.
            let server = try Self.server { $0.headerTimeout = 0.5 }
            defer { server.shutdown() }
            let client = try server.connect()
            var answered: RawResponse?
            for byte in "GET /x HTTP/1.1\r\nHost: t\r\nX-Slow: abcdefghijklmnopqrstuvwxyz".utf8 {
                do { try client.send([byte]) } catch { break }  // the server may have closed already
                if !client.isQuiet(for: 0.1) { answered = try client.readResponse(); break }
            }
            #expect(answered?.status == 408)
        }

        @Test func aKeptAliveConnectionsNextHeadAlsoTimesOut() throws {
            let server = try Self.server { $0.headerTimeout = 0.5 }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/x"))
            #expect(try client.readResponse().status == 200)
            try client.send("GET /x HTTP/1.1\r\n")
            #expect(try client.readResponse().status == 408)
            #expect(client.waitForClose())
        }

        @Test func aSilentNewConnectionIsClosedAfterTheHeaderTimeout() throws {
            let server = try Self.server { $0.headerTimeout = 0.5 }
            defer { server.shutdown() }
            let client = try server.connect()
            #expect(client.waitForClose(within: 4))
            #expect(client.pending.isEmpty, "nothing to answer: closed without a response")
            #expect(eventually { server.server.openConnections == 0 })
        }

        @Test func aBodyThatStallsGets408() throws {
            let server = try Self.server { $0.bodyTimeout = 0.5 }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
            let response = try client.readResponse()
            #expect(response.status == 408)
            #expect(response.closes)
            #expect(client.waitForClose())
        }

        @Test func aChunkedBodyThatStallsGets408() throws {
            let server = try Self.server { $0.bodyTimeout = 0.5 }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")
            #expect(try client.readResponse().status == 408)
            #expect(client.waitForClose())
        }

        @Test func aSlowButSteadyBodyIsNotCutOff() throws {
            // The body timeout is per read, not for the whole body.
            let server = try Self.server { $0.bodyTimeout = 0.5 }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 8\r\n\r\n")
            for byte in "12345678".utf8 {
                usleep(200_000)
                try client.send([byte])
            }
            #expect(try client.readResponse().text == "12345678")
        }

        /// A body trickled just fast enough to never trip the silence limit is still cut once it
        /// falls behind the minimum rate; one that keeps up is not.
        @Test func aBodyBelowTheMinimumRateGets408() throws {
            let server = try Self.server { $0.bodyTimeout = 5; $0.bodyRateGrace = 0.5; $0.minBodyRate = 100 }
            defer { server.shutdown() }
            let slow = try server.connect()
            try slow.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n")
            let started = ContinuousClock.now
            for _ in 0..<40 {
                guard (try? slow.send("x")) != nil else { break }
                if !slow.isQuiet(for: 0.15) { break }  // the 408 arrived
            }
            #expect(try slow.readResponse().status == 408)
            #expect(ContinuousClock.now - started < .seconds(4), "cut by the rate, well before the 5 s silence limit")

            let steady = try server.connect()
            try steady.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 300\r\n\r\n")
            for _ in 0..<10 {
                usleep(100_000)
                try steady.send(String(repeating: "y", count: 30))  // 300 B/s, over the minimum
            }
            #expect(try steady.readResponse().text == String(repeating: "y", count: 300))
        }

        @Test func anIdleKeptAliveConnectionIsClosed() throws {
            let server = try Self.server { $0.idleTimeout = 0.5 }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/x"))
            #expect(try client.readResponse().status == 200)
            let start = now()
            #expect(client.waitForClose(within: 4))
            #expect(now() - start >= 0.3)
            #expect(client.pending.isEmpty, "an idle close sends nothing")
        }

        @Test func aClientThatNeverReadsItsResponseIsCutOff() throws {
            let big = patternBytes(32 * 1024 * 1024)
            let server = try TestServer(configure: { $0.writeTimeout = 0.5 }) { t in
                t.add("GET", "/big") { _, r in r.respond(HTTPResponse(body: .bytes(big))) }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/big"))
            #expect(eventually { server.server.openConnections == 1 })
            #expect(eventually(within: 5) { server.server.openConnections == 0 }, "closed by the write timeout")
        }

        @Test func theIdleTimeoutDoesNotCutAHandlerShort() throws {
            // A handler that takes longer than every timeout still gets its answer out.
            let server = try TestServer(configure: {
                $0.idleTimeout = 0.3; $0.headerTimeout = 0.3; $0.bodyTimeout = 0.3; $0.writeTimeout = 0.3
            }) { t in
                t.add("GET", "/slow") { _, r in later(1.2) { r.respond(.text("late")) } }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/slow"))
            #expect(try client.readResponse().text == "late")
        }
    }
}
