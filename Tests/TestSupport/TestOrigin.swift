import Digests
import Glibc
import HTTPServer
import Logging
import Reactor

/// A small origin for the engine's and the core's tests, on our own HTTP server: deterministic
/// bytes with ranges and validators, redirects, and a count of requests per path.
package final class TestOrigin: @unchecked Sendable {
    package let server: HTTPServer
    package let hits = Locked<[String: Int]>([:])
    package let concurrent = Locked<(now: Int, max: Int)>((0, 0))
    /// The `Range` header of every request that carried one, in arrival order.
    package let ranges = Locked<[String]>([])
    /// Keys of `/stall-once` already stalled: each stalls its first request only.
    private let stalled = Locked<Set<String>>([])
    /// The stalled responses, with the rest of their bodies, until `release` sends it.
    private let held = Locked<[(ResponseStream, [UInt8])]>([])

    package init() throws {
        let hits = self.hits
        let concurrent = self.concurrent
        let ranges = self.ranges
        let stalled = self.stalled
        let held = self.held
        let router = Router { t in
            t.add("GET", "/bytes/{n}") { req, responder in
                hits.withLock { $0["/bytes", default: 0] += 1 }
                if let range = req.headers["range"] { ranges.withLock { $0.append(range) } }
                responder.respond(TestOrigin.bytes(req, n: Int(req.parameters["n"]!)!))
            }
            t.add("GET", "/slow/{ms}") { req, responder in
                concurrent.withLock { $0.now += 1; $0.max = max($0.max, $0.now) }
                let ms = Int(req.parameters["ms"]!)!
                hits.withLock { $0[String(req.path), default: 0] += 1 }
                Thread.after(ms: ms) {
                    concurrent.withLock { $0.now -= 1 }
                    responder.respond(.text("done"))
                }
            }
            t.add("GET", "/stall") { _, responder in
                // 1,000 bytes, then silence with the connection open.
                responder.respond(HTTPResponse(status: 200, body: .stream { $0.write([UInt8](repeating: 7, count: 1000)) }))
            }
            t.add("GET", "/stall-once/{n}") { req, responder in
                // The first request of a key sends the first half of /bytes/{n} with its
                // validator, then silence with the connection open: a transfer caught mid-way for
                // as long as a test needs. Later requests are /bytes/{n}'s (ranges included).
                let n = Int(req.parameters["n"]!)!
                guard stalled.withLock({ $0.insert(req.query("key") ?? "").inserted }) else {
                    if let range = req.headers["range"] { ranges.withLock { $0.append(range) } }
                    return responder.respond(TestOrigin.bytes(req, n: n))
                }
                let content = TestOrigin.content(n)
                let headers = HTTPHeaders([("ETag", "\"v1-\(n)\""), ("Content-Type", "application/octet-stream")])
                responder.respond(HTTPResponse(status: 200, headers: headers, body: .stream { stream in
                    stream.write(Array(content[..<(n / 2)]))
                    held.withLock { $0.append((stream, Array(content[(n / 2)...]))) }
                }))
            }
            t.add("GET", "/redirect/{n}") { req, responder in
                let n = Int(req.parameters["n"]!)!
                let location = n > 1 ? "/redirect/\(n - 1)" : "/bytes/100"
                responder.respond(HTTPResponse(status: 302, headers: HTTPHeaders([("Location", location)])))
            }
            t.add("GET", "/redirect-to") { req, responder in
                responder.respond(HTTPResponse(status: 302, headers: HTTPHeaders([("Location", req.query("url")!)])))
            }
            for method in ["PUT", "POST", "PATCH"] {
                t.add(method, "/upload", .streamed({ req throws(HTTPProblem) in UploadSink(method: req.method) }))
            }
            t.add("POST", "/redirect307") { _, responder in
                responder.respond(HTTPResponse(status: 307, headers: HTTPHeaders([("Location", "/upload")])))
            }
            for method in ["GET", "POST"] {
                t.add(method, "/status/{code}") { req, responder in
                    hits.withLock { $0["/status", default: 0] += 1 }
                    responder.respond(.text("status", status: Int(req.parameters["code"]!)!))
                }
            }
        }
        server = try HTTPServer(configuration: HTTPServerConfiguration(address: SocketAddress("127.0.0.1:0")!, loopCount: 1),
                                router: router, logger: Logger(label: "origin"))
    }

    /// A stalled response held here holds its connection, which holds the server and so the
    /// routes, which hold `held`: a cycle LeakSanitizer reported for every test that left one.
    deinit { held.withLock { $0.removeAll() } }

    /// /bytes/{n}: the content with an ETag (`?etag=` changes it), a `Range` honoured unless
    /// `?ignore_range` or an `If-Range` that does not match.
    private static func bytes(_ req: HTTPRequest, n: Int) -> HTTPResponse {
        let body = TestOrigin.content(n)
        let etag = "\"v\(req.query("etag") ?? "1")-\(n)\""
        var headers = HTTPHeaders([("ETag", etag), ("Content-Type", "application/octet-stream")])
        if req.query("ignore_range") == nil, let range = req.headers["range"], range.hasPrefix("bytes="),
           req.headers["if-range"].map({ $0 == etag }) ?? true,
           let start = Int(range.dropFirst(6).split(separator: "-")[0]), start < n
        {
            headers.add("Content-Range", "bytes \(start)-\(n - 1)/\(n)")
            return HTTPResponse(status: 206, headers: headers, body: .bytes(Array(body[start...])))
        }
        return HTTPResponse(status: 200, headers: headers, body: .bytes(body))
    }

    /// Sends the rest of every stalled `/stall-once` response and ends it.
    package func release() {
        let all = held.withLock { held in
            let all = held
            held = []
            return all
        }
        for (stream, rest) in all {
            stream.write(rest)
            stream.finish()
        }
    }

    package func url(_ path: String) -> String { "http://127.0.0.1:\(server.boundAddress.port)\(path)" }

    package func hitCount(_ path: String) -> Int { hits.withLock { $0[path] ?? 0 } }

    /// Deterministic content of length n.
    package static func content(_ n: Int) -> [UInt8] {
        (0..<n).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
    }

    package static func sha256(_ bytes: [UInt8]) -> String {
        SHA256Hex.of(bytes)
    }
}


/// Receives an upload and answers with its method, size and sha256.
final class UploadSink: RequestBodySink {
    let method: String
    let hasher = SHA256Stream()
    var size = 0

    init(method: String) { self.method = method }

    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPProblem) {
        hasher.update(bytes)
        size += bytes.count
    }

    func finish(_ responder: Responder) {
        let sha = hasher.finalizeHex()
        responder.respond(.text("\(method) \(size) \(sha)"))
    }

    func abort() {}
}

enum Thread {
    /// Runs `work` after `ms` milliseconds on a new thread.
    static func after(ms: Int, _ work: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(WorkBox(ms: ms, work: work))
        var t = pthread_t()
        pthread_create(&t, nil, { arg in
            let box = Unmanaged<WorkBox>.fromOpaque(arg!).takeRetainedValue()
            usleep(UInt32(box.ms * 1000))
            box.work()
            return nil
        }, box.toOpaque())
        pthread_detach(t)
    }

    private final class WorkBox {
        let ms: Int
        let work: @Sendable () -> Void
        init(ms: Int, work: @escaping @Sendable () -> Void) { self.ms = ms; self.work = work }
    }
}
