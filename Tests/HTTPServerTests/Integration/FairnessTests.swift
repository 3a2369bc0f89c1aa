import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
@testable import HTTPServer

extension Integration {
    /// A slow or idle client never blocks others: a handler never blocks its loop, and each
    /// connection's deadlines are enforced (docs/ARCHITECTURE.md, "Handlers never block a loop").
    @Suite struct FairnessTests {
        @Test func idleAndSlowConnectionsDoNotDelayOthers() throws {
            let server = try TestServer { t in
                t.add("GET", "/x") { _, r in r.respond(.text("x")) }
                t.add("POST", "/echo") { req, r in r.respond(HTTPResponse(body: .bytes(req.body))) }
            }
            defer { server.shutdown() }
            // 100 that only connect, 100 that send part of a head and then dribble more of it.
            let idle = try (0..<100).map { _ in try server.connect() }
            let slow = try (0..<100).map { _ in try server.connect() }
            for c in slow { try c.send("GET /x HTTP/1.1\r\nHost: t\r\nX-Slow: ") }
            #expect(eventually { server.server.openConnections >= 200 }, "the server holds all 200")

            let trickler = Trickler(clients: slow)
            defer { trickler.stop() }
            #expect(eventually { trickler.bytesSent >= 200 }, "the slow clients are dribbling")
            for _ in 0..<3 {
                let client = try server.connect()
                let start = now()
                try client.send(request("GET", "/x"))
                #expect(try client.readResponse().text == "x")
                try client.send(request("POST", "/echo", body: "payload"))
                #expect(try client.readResponse().text == "payload")
                #expect(now() - start < 2, "a normal request is not held up by 200 idle connections")
            }
            trickler.stop()
            // The slow ones were neither answered nor dropped meanwhile: their heads are still open.
            #expect(trickler.bytesSent > 0)
            #expect(slow.allSatisfy { $0.isQuiet(for: 0) })
            #expect(idle.allSatisfy { $0.isQuiet(for: 0) })
            #expect(server.server.openConnections >= 200)
        }

        /// A request with a large body is handled off its connection's loop: however long its
        /// handler takes (parsing a hostile 1 MiB JSON body), the loop's other connections are
        /// served meanwhile. One loop, so both connections share it.
        @Test func aLargeBodysHandlerDoesNotHoldItsLoop() throws {
            let server = try TestServer(configure: { $0.loopCount = 1; $0.offloadBodyBytes = 1000 }) { t in
                t.add("GET", "/x") { _, r in r.respond(.text("x")) }
                t.add("POST", "/slow") { req, r in
                    usleep(1_500_000)  // stands in for a slow parse
                    r.respond(.text("\(req.body.count)"))
                }
            }
            defer { server.shutdown() }
            let heavy = try server.connect()
            try heavy.send(request("POST", "/slow", body: String(repeating: "j", count: 2000)))
            usleep(100_000)
            let light = try server.connect()
            let start = now()
            try light.send(request("GET", "/x"))
            #expect(try light.readResponse().text == "x")
            #expect(now() - start < 1, "answered while the large body's handler still runs")
            #expect(try heavy.readResponse().text == "2000")
        }

        @Test func aClientThatDoesNotReadDoesNotBlockItsLoop() throws {
            let big = patternBytes(16 * 1024 * 1024)
            let server = try TestServer(configure: { $0.loopCount = 1 }) { t in
                t.add("GET", "/big") { _, r in r.respond(HTTPResponse(body: .bytes(big))) }
                t.add("GET", "/x") { _, r in r.respond(.text("x")) }
            }
            defer { server.shutdown() }
            let stuck = try server.connect()
            try stuck.send(request("GET", "/big"))
            _ = try stuck.readHead()  // then reads no more: the server's socket buffer fills
            let start = now()
            for _ in 0..<5 {
                let client = try server.connect()
                try client.send(request("GET", "/x"))
                #expect(try client.readResponse().text == "x")
            }
            #expect(now() - start < 2)
            // The stuck client can still take its response, complete.
            let rest = try stuck.readExactly(big.count, deadline: now() + 10)
            #expect(rest == big)
        }

        @Test func concurrentClientsEachGetTheirOwnAnswers() throws {
            let server = try TestServer { t in
                t.add("POST", "/echo/{n}") { req, r in
                    let response = HTTPResponse(headers: HTTPHeaders([("X-N", req.parameters["n"]!)]), body: .bytes(req.body))
                    // Half answer on the loop, half from other threads, as real handlers do.
                    if req.body.count % 2 == 0 { r.respond(response) } else { later(0.001) { r.respond(response) } }
                }
            }
            defer { server.shutdown() }
            let failures = Atomic<Int>(0)
            let port = server.port
            DispatchQueue.concurrentPerform(iterations: 16) { worker in
                do {
                    let client = try RawClient(port: port, timeout: 10)
                    for i in 0..<40 {
                        let body = patternBytes(i * 37 + worker, seed: UInt64(worker * 1000 + i + 1))
                        try client.send(Array("POST /echo/\(worker)-\(i) HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
                        let response = try client.readResponse()
                        if response.header("X-N") != "\(worker)-\(i)" || response.body != body { failures.add(1, ordering: .relaxed) }
                    }
                } catch {
                    failures.add(1000, ordering: .relaxed)
                }
            }
            #expect(failures.load(ordering: .relaxed) == 0)
        }
    }
}

/// Sends one more header byte to each slow client every 50 ms, on a thread of its own (not a
/// shared queue, which other tests running in parallel may keep busy).
final class Trickler: @unchecked Sendable {
    private let clients: [RawClient]
    private let stopped = Atomic<Bool>(false)
    private let sent = Atomic<Int>(0)
    private let done = DispatchSemaphore(value: 0)
    private var joined = false

    init(clients: [RawClient]) {
        self.clients = clients
        Thread.detachNewThread { [self] in
            while !stopped.load(ordering: .acquiring) {
                for c in self.clients {
                    if (try? c.send("a")) != nil { sent.add(1, ordering: .relaxed) }
                }
                usleep(50_000)
            }
            done.signal()
        }
    }

    var bytesSent: Int { sent.load(ordering: .relaxed) }

    /// Stops and waits for the sending thread; safe to call twice from the test's thread.
    func stop() {
        guard !joined else { return }
        joined = true
        stopped.store(true, ordering: .releasing)
        done.wait()
    }
}
