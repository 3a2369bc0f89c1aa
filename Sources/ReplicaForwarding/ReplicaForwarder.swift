import CCurl
import Glibc
import HTTPServer
import Reactor
import Synchronization
import TransferEngine

/// Forwards a request to the replica that holds its session (cluster mode) and relays the answer.
///
/// One curl multi handle on an epoll thread of its own (`CURLMOPT_SOCKETFUNCTION` and
/// `CURLMOPT_TIMERFUNCTION`, as the transfer engine drives its own): any number of requests are in
/// flight at once without a thread each, and the server threads that hand requests over never
/// wait. curl keeps the connections to each replica alive and reuses them, at most
/// `connectionsPerReplica` at a time; requests beyond that wait in curl for a free one.
package final class ReplicaForwarder: @unchecked Sendable {
    /// Marks a forwarded request, with the sending replica's address and a proof that a replica
    /// sent it (`ForwardingProof`) as its value. A replica serves such a request itself whatever
    /// its placement says: the lease may have moved while the request travelled, and forwarding
    /// it on could send it round in a loop.
    package static let forwardedHeader = "Transferd-Forwarded"

    package struct Limits: Sendable {
        /// Seconds to connect to the holder: it is on the same network, and a replica that does
        /// not accept within this is taken for gone (503, retry).
        package var connectTimeout: Double = 2
        /// Seconds the holder may send nothing before it is taken for hung (503, retry), besides
        /// the `wait` a request asks for (a task's long poll waits up to ten minutes). Silence,
        /// not a total: relaying a large file to a slow client may take as long as it takes, and
        /// a relay paused for the client is not silence (curl skips its speed check then).
        package var idleTimeout: Double = 30
        package var connectionsPerReplica = 32
        /// An answer up to this size is collected and sent whole; a longer one is relayed.
        package var collectedBodyBytes = 256 * 1024
        /// Bytes of a relayed body the client may be behind before reading from the holder pauses.
        package var relayWindowBytes = 1024 * 1024

        package init() {}
    }

    /// This replica's own address, as the others reach it: sent in `forwardedHeader`.
    package let advertisedAddress: String
    /// Signs what this replica forwards and checks what it receives.
    package let proof: ForwardingProof
    let limits: Limits
    let loop: EventLoop
    private let multi: OpaquePointer
    private let events: CurlSocketEvents
    private let forwarded = Atomic<Int>(0)
    private let shutDown = Atomic<Bool>(false)

    // Loop-confined.
    private var inFlight: [ObjectIdentifier: ForwardedExchange] = [:]
    private var idleHandles: [OpaquePointer] = []
    private var stopped = false

    /// Starts the forwarder's thread. The process must have called `curl_global_init` (the
    /// transfer engine's `globalInit`) before.
    package init(advertisedAddress: String, proof: ForwardingProof, limits: Limits = Limits()) {
        self.advertisedAddress = advertisedAddress
        self.proof = proof
        self.limits = limits
        loop = EventLoop(name: "forward")
        multi = OpaquePointer(curl_multi_init()!)
        events = CurlSocketEvents(multi: multi, loop: loop)
        let m = UnsafeMutableRawPointer(multi)
        _ = transferd_multi_setopt_long(m, CURLMOPT_MAX_HOST_CONNECTIONS, limits.connectionsPerReplica)
        // Idle connections kept for reuse: enough for every connection to a dozen replicas.
        _ = transferd_multi_setopt_long(m, CURLMOPT_MAXCONNECTS, limits.connectionsPerReplica * 12)
        events.start { [unowned self] context, result in
            end(Unmanaged<ForwardedExchange>.fromOpaque(context).takeUnretainedValue(), complete: result == CURLE_OK,
                detail: String(cString: curl_easy_strerror(result)))
        }
        loop.start()
    }

    /// Requests handed to `forward` so far.
    package var forwardedCount: Int { forwarded.load(ordering: .relaxed) }

    /// Sends `request` to the replica at `holder` ("host:port") and answers `responder` with what
    /// it answers; 503 `replica_unavailable` (`Retry-After: 1`) when it cannot be reached.
    /// Returns at once; the request's body must be buffered (`HTTPRequest.body`).
    package func forward(_ request: HTTPRequest, to holder: String, _ responder: Responder) {
        forwarded.add(1, ordering: .relaxed)
        let exchange = ForwardedExchange(request, to: holder, forwarder: self, responder: responder)
        loop.execute { [self] in start(exchange) }
    }

    /// Ends every exchange still in flight (the client of a relay sees its connection close, one
    /// still waiting gets 503) and stops the thread. Call after the HTTP server's shutdown, so
    /// the requests it let finish were answered first. Only the first call does anything.
    package func shutdown() {
        guard !shutDown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.execute { [self] in
            stopped = true
            for exchange in Array(inFlight.values) { end(exchange, complete: false, detail: "the replica is shutting down") }
        }
        loop.stopAndJoin()
        // The loop's thread is gone: nothing else calls curl for this multi any more.
        events.detach()
        curl_multi_cleanup(UnsafeMutableRawPointer(multi))
        for easy in idleHandles { curl_easy_cleanup(UnsafeMutableRawPointer(easy)) }
        idleHandles = []
    }

    // MARK: exchanges (loop thread)

    private func start(_ exchange: ForwardedExchange) {
        guard !stopped else { return exchange.ended(complete: false, detail: "the replica is shutting down") }
        let easy = idleHandles.popLast() ?? OpaquePointer(curl_easy_init()!)
        exchange.easy = easy
        exchange.headerList = configure(easy, for: exchange)
        inFlight[ObjectIdentifier(exchange)] = exchange
        let rc = curl_multi_add_handle(UnsafeMutableRawPointer(multi), UnsafeMutableRawPointer(easy))
        if rc != CURLM_OK { end(exchange, complete: false, detail: "curl_multi_add_handle: \(rc.rawValue)") }
    }

    /// The client of a relayed body is gone, or its stream ended: the holder's transfer stops.
    func abandon(_ exchange: ForwardedExchange) {
        guard inFlight[ObjectIdentifier(exchange)] != nil else { return }
        end(exchange, complete: false, detail: "the client went away")
    }

    /// Never from inside a curl callback: it takes the handle off the multi.
    private func end(_ exchange: ForwardedExchange, complete: Bool, detail: String) {
        guard let easy = exchange.easy else { return }
        curl_multi_remove_handle(UnsafeMutableRawPointer(multi), UnsafeMutableRawPointer(easy))
        curl_slist_free_all(exchange.headerList)
        exchange.headerList = nil
        exchange.easy = nil
        inFlight[ObjectIdentifier(exchange)] = nil
        curl_easy_reset(UnsafeMutableRawPointer(easy))
        if idleHandles.count < limits.connectionsPerReplica {
            idleHandles.append(easy)
        } else {
            curl_easy_cleanup(UnsafeMutableRawPointer(easy))
        }
        exchange.ended(complete: complete, detail: detail)
    }

    private func configure(_ easy: OpaquePointer, for exchange: ForwardedExchange) -> UnsafeMutablePointer<curl_slist>? {
        let h = UnsafeMutableRawPointer(easy)
        let me = Unmanaged.passUnretained(exchange).toOpaque()
        _ = transferd_easy_setopt_string(h, CURLOPT_URL, exchange.url)
        _ = transferd_easy_setopt_ptr(h, CURLOPT_PRIVATE, me)
        _ = transferd_easy_setopt_long(h, CURLOPT_NOSIGNAL, 1)
        _ = transferd_easy_setopt_string(h, CURLOPT_PROTOCOLS_STR, "http")
        // Replicas talk directly: a proxy from the environment must not reroute them.
        _ = transferd_easy_setopt_string(h, CURLOPT_PROXY, "")
        _ = transferd_easy_setopt_long(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1)
        // The path goes as the client sent it: curl must not resolve `..` or re-encode it.
        _ = transferd_easy_setopt_long(h, CURLOPT_PATH_AS_IS, 1)
        // Bytes are relayed as the holder sent them, whatever their Content-Encoding.
        _ = transferd_easy_setopt_long(h, CURLOPT_HTTP_CONTENT_DECODING, 0)
        _ = transferd_easy_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, Int(limits.connectTimeout * 1000))
        _ = transferd_easy_setopt_long(h, CURLOPT_LOW_SPEED_LIMIT, 1)
        _ = transferd_easy_setopt_long(h, CURLOPT_LOW_SPEED_TIME, Int((limits.idleTimeout + exchange.wait).rounded(.up)))
        _ = transferd_easy_setopt_long(h, CURLOPT_BUFFERSIZE, 64 * 1024)
        _ = transferd_easy_setopt_data_cb(h, CURLOPT_HEADERFUNCTION, forwarderHeaderCallback)
        _ = transferd_easy_setopt_ptr(h, CURLOPT_HEADERDATA, me)
        _ = transferd_easy_setopt_data_cb(h, CURLOPT_WRITEFUNCTION, forwarderWriteCallback)
        _ = transferd_easy_setopt_ptr(h, CURLOPT_WRITEDATA, me)
        switch exchange.method {
        case "GET": break
        case "HEAD": _ = transferd_easy_setopt_long(h, CURLOPT_NOBODY, 1)
        default:
            _ = transferd_easy_setopt_string(h, CURLOPT_CUSTOMREQUEST, exchange.method)
            // A DELETE without a body goes without one; a POST, PUT or PATCH says its length, 0 included.
            if !exchange.body.isEmpty || ["POST", "PUT", "PATCH"].contains(exchange.method) {
                _ = transferd_easy_setopt_off(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(exchange.body.count))
                // Copied by curl (the size set above, so an empty body's one byte stays unsent): an
                // empty array may have no address, which curl would take for a string to measure.
                (exchange.body.isEmpty ? [0] : exchange.body).withUnsafeBytes { bytes in
                    _ = transferd_easy_setopt_ptr(h, CURLOPT_COPYPOSTFIELDS, bytes.baseAddress)
                }
            }
        }
        var list: UnsafeMutablePointer<curl_slist>?
        for line in exchange.headerLines { list = curl_slist_append(list, line) }
        _ = transferd_easy_setopt_slist(h, CURLOPT_HTTPHEADER, list)
        return list
    }
}

private let forwarderHeaderCallback: transferd_data_callback = { data, size, count, userp in
    let exchange = Unmanaged<ForwardedExchange>.fromOpaque(userp!).takeUnretainedValue()
    exchange.headerLine(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}

private let forwarderWriteCallback: transferd_data_callback = { data, size, count, userp in
    let exchange = Unmanaged<ForwardedExchange>.fromOpaque(userp!).takeUnretainedValue()
    return exchange.received(UnsafeRawBufferPointer(start: data, count: size * count))
}
