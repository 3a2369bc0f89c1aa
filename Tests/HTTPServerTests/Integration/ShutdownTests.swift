import Dispatch
import Glibc
import Synchronization
import Testing
@testable import HTTPServer

extension Integration {
    /// Graceful shutdown: in-flight responses finish, idle connections close, the listener goes.
    @Suite struct ShutdownTests {
        @Test func inFlightResponseIsDeliveredIdleConnectionsCloseNewOnesAreRefused() throws {
            let started = DispatchSemaphore(value: 0)
            let body = patternBytes(300_000)
            let server = try TestServer { t in
                t.add("GET", "/x") { _, r in r.respond(.text("x")) }
                t.add("GET", "/work") { _, r in
                    started.signal()
                    later(0.3) { r.respond(HTTPResponse(body: .bytes(body))) }
                }
            }
            let port = server.port
            var shutDown = false
            defer { if !shutDown { server.shutdown() } }

            let idle = try server.connect()
            try idle.send(request("GET", "/x"))
            #expect(try idle.readResponse().status == 200)
            let fresh = try server.connect()  // connected, nothing sent yet

            let busy = try server.connect()
            try busy.send(request("GET", "/work"))
            #expect(started.wait(timeout: .now() + 5) == .success)

            let start = now()
            server.shutdown()
            shutDown = true
            let took = now() - start
            #expect(took >= 0.1, "shutdown waited for the handler")
            #expect(took < 3, "and no longer than it needed")

            let response = try busy.readResponse()
            #expect(response.status == 200)
            #expect(response.body == body, "delivered completely")
            #expect(response.closes, "the last response of a draining server says so")
            #expect(busy.waitForClose())
            #expect(idle.waitForClose())
            #expect(idle.pending.isEmpty)
            #expect(fresh.waitForClose())
            #expect(server.server.openConnections == 0)

            #expect(throws: RawClient.ConnectError.self) { _ = try RawClient(port: port) }
        }

        @Test func aConnectionMidResponseClosesWhenThatResponseEnds() throws {
            // Keep-alive was promised before shutdown began; the connection still must not sit
            // idle until the grace period runs out.
            let big = patternBytes(16 * 1024 * 1024)
            let server = try TestServer(configure: { $0.shutdownGrace = 8 }) { t in
                t.add("GET", "/big") { _, r in r.respond(HTTPResponse(body: .bytes(big))) }
            }
            let client = try server.connect(timeout: 10)
            try client.send(request("GET", "/big"))
            let head = try client.readHead()
            #expect(head.header("Connection") == nil)
            let took = ShutdownTiming()
            let stopped = DispatchSemaphore(value: 0)
            let http = server.server
            DispatchQueue.global().async {
                let start = now()
                http.shutdown()  // blocks until the connection is gone
                took.milliseconds.store(Int((now() - start) * 1000), ordering: .releasing)
                stopped.signal()
            }
            usleep(100_000)  // let shutdown begin while the response is in flight
            #expect(try client.readExactly(big.count) == big)
            #expect(client.waitForClose(within: 4), "closed once its response was out")
            #expect(stopped.wait(timeout: .now() + 10) == .success)
            #expect(took.milliseconds.load(ordering: .acquiring) < 5000, "shutdown did not wait out the grace period")
        }

        @Test func shutdownTwiceIsHarmless() throws {
            let server = try TestServer { t in t.add("GET", "/x") { _, r in r.respond(.text("x")) } }
            let client = try server.connect()
            try client.send(request("GET", "/x"))
            #expect(try client.readResponse().status == 200)
            server.shutdown()
            server.shutdown()
            #expect(client.waitForClose())
        }

        @Test func shutdownEndsOpenStreamsCleanly() throws {
            let started = DispatchSemaphore(value: 0)
            let server = try TestServer { t in
                t.add("GET", "/events") { _, r in
                    r.respond(HTTPResponse(body: .stream { stream in
                        stream.write(Array("event".utf8))
                        started.signal()
                    }))
                }
            }
            let client = try server.connect()
            try client.send(request("GET", "/events"))
            #expect(started.wait(timeout: .now() + 5) == .success)
            server.shutdown()
            let response = try client.readResponse()
            #expect(response.sawLastChunk, "the stream ended with its terminating chunk")
            #expect(response.text == "event")
            #expect(client.waitForClose())
        }

        @Test func shutdownGivesUpOnAHandlerAfterTheGracePeriod() throws {
            let server = try TestServer(configure: { $0.shutdownGrace = 0.5 }) { t in
                t.add("GET", "/never") { _, r in later(30) { r.respond(.text("too late")) } }
            }
            let client = try server.connect()
            try client.send(request("GET", "/never"))
            #expect(client.isQuiet(for: 0.1))
            let start = now()
            server.shutdown()
            #expect(now() - start < 3)
            #expect(client.waitForClose())
        }
    }
}


final class ShutdownTiming: Sendable {
    let milliseconds = Atomic<Int>(-1)
}
