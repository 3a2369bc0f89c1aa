import CoreMetrics
import CLinux
import Glibc
import Logging
import Reactor

/// One event loop's share of the server: the connections it owns, their timeouts, and (on the
/// first worker) the listening socket, whose accepted connections are dealt out round-robin.
final class ServerWorker: EventHandler, @unchecked Sendable {
    let index: Int
    let loop: EventLoop
    let shared: ServerShared
    private var connections: [Connection] = []
    private var dateCache = HTTPDateCache()
    private var requestCounter: UInt64 = 0
    private let requestIDPrefix: String
    private var counters: [MetricKey: CoreMetrics.Counter] = [:]
    private var timers: [Int: CoreMetrics.Timer] = [:]
    private var nextWorker = 0
    private var listening = false

    init(index: Int, shared: ServerShared) {
        self.index = index
        self.shared = shared
        loop = EventLoop(name: "http-\(index)")
        requestIDPrefix = String(UInt32.random(in: 0...UInt32.max), radix: 16) + String(index, radix: 16)
        super.init()
    }

    var connectionCount: Int { connections.count }

    // MARK: accepting (first worker only)

    func startListening() {
        listening = true
        loop.register(shared.listenFD, events: UInt32(EPOLLIN.rawValue), handler: self)
    }

    func stopListening() {
        guard listening else { return }
        listening = false
        loop.deregister(shared.listenFD)
    }

    override func handleEvents(_ events: UInt32) {
        while listening {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(shared.listenFD, $0, &length, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
                }
            }
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE { pauseAccepting() }
                return
            }
            guard shared.admitConnection() else {
                // Over the connection limit: a short answer beats a silent reset.
                _ = overloadedResponse().withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                Glibc.close(fd)
                continue
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let remote = SocketAddress.describe(storage)
            let target = shared.workers[nextWorker % shared.workers.count]
            nextWorker &+= 1
            if target === self {
                adopt(fd: fd, remote: remote)
            } else {
                target.loop.execute { target.adopt(fd: fd, remote: remote) }
            }
        }
    }

    /// Out of descriptors: stop polling the listener for a moment instead of spinning on it.
    private func pauseAccepting() {
        loop.modify(shared.listenFD, events: 0)
        loop.scheduleTimer(at: MonotonicClock.after(seconds: 0.1)) { [weak self] in
            guard let self, self.listening else { return }
            self.loop.modify(self.shared.listenFD, events: UInt32(EPOLLIN.rawValue))
        }
    }

    func adopt(fd: Int32, remote: String) {
        if shared.isShuttingDown {
            Glibc.close(fd)
            shared.releaseConnection()
            return
        }
        let connection = Connection(fd: fd, remoteAddress: remote, worker: self)
        connection.slot = connections.count
        connections.append(connection)
        let events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        loop.register(fd, events: UInt32(events), handler: connection)
    }

    func remove(_ connection: Connection) {
        let slot = connection.slot
        guard slot >= 0, slot < connections.count, connections[slot] === connection else { return }
        let last = connections.removeLast()
        if slot < connections.count {
            connections[slot] = last
            last.slot = slot
        }
        connection.slot = -1
        shared.releaseConnection()
    }

    // MARK: timeouts and shutdown

    /// Checks deadlines twice a second: timeouts are coarse by nature, and one scan is cheaper
    /// than a timer per connection re-armed on every read.
    func startSweeping() {
        loop.scheduleTimer(at: MonotonicClock.after(seconds: 0.5)) { [weak self] in
            guard let self else { return }
            let now = MonotonicClock.now()
            for connection in self.connections.filter({ $0.deadline <= now }) { connection.timedOut() }
            self.startSweeping()
        }
    }

    func drainAll() {
        for connection in connections { connection.drain() }
    }

    func closeAll() {
        for connection in connections { connection.close() }
    }

    // MARK: per-request helpers

    func date() -> [UInt8] { dateCache.current() }

    /// The client's `X-Request-Id` when it is a plain token of at most 128 characters; otherwise a
    /// fresh id, unique for this process.
    func requestID(from headers: HTTPHeaders) -> String {
        if let given = headers["x-request-id"], !given.isEmpty, given.utf8.count <= 128,
           given.utf8.allSatisfy({ CharacterClass.isUnreserved($0) || $0 == 0x3A })
        {
            return given
        }
        requestCounter &+= 1
        return requestIDPrefix + "-" + String(requestCounter, radix: 16)
    }

    func recordCompleted(_ exchange: Exchange, remoteAddress: String) {
        let status = exchange.status ?? 0
        exchange.admission.completion?(status, exchange.location)
        let elapsed = MonotonicClock.now() &- exchange.start
        let key = MetricKey(route: exchange.routeIndex, method: exchange.head.method, status: status)
        if let counter = counters[key] {
            counter.increment()
        } else {
            let counter = CoreMetrics.Counter(label: "http_requests_total", dimensions: [
                ("route", exchange.route), ("method", exchange.head.method), ("status", String(status)),
            ])
            counters[key] = counter
            counter.increment()
        }
        let timer = timers[exchange.routeIndex] ?? {
            let t = CoreMetrics.Timer(label: "http_request_duration_seconds", dimensions: [("route", exchange.route)])
            timers[exchange.routeIndex] = t
            return t
        }()
        timer.recordNanoseconds(Int64(elapsed))
        guard shared.logger.logLevel <= .info else { return }
        shared.logger.info("request", metadata: [
            "request_id": .string(exchange.requestID),
            "method": .string(exchange.head.method),
            "path": .string(String(exchange.head.path)),
            "route": .string(exchange.route),
            "status": .stringConvertible(status),
            "duration_ms": .stringConvertible(Double(elapsed / 1000) / 1000),
            "remote": .string(remoteAddress),
        ])
    }

    /// The 503 for a connection over the limit. Built per refusal rather than once, so that it
    /// carries a `Date` like every other response (RFC 9110 §6.6.1).
    private func overloadedResponse() -> [UInt8] {
        var out: [UInt8] = []
        ResponseHead(status: 503, headers: ServerWorker.overloadedHeaders, versionMinor: 1, keepAlive: false,
                     requestID: "", date: date(), contentLength: ServerWorker.overloadedBody.count).serialize(into: &out)
        return out + ServerWorker.overloadedBody
    }

    private static let overloadedBody =
        HTTPProblem(503, "too_many_connections", "the server is at its connection limit; retry shortly").jsonBytes()
    private static let overloadedHeaders = HTTPHeaders([("Content-Type", "application/problem+json")])
}

/// Routes by their index in the router (-1 when none matched): cheaper to hash than the pattern.
struct MetricKey: Hashable {
    let route: Int
    let method: String
    let status: Int
}
