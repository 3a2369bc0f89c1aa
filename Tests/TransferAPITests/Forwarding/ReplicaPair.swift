import Dispatch
import Glibc
import HTTPServer
import Logging
import ReplicaForwarding
import Reactor
@testable import TransferCore
import TransferEngine
import TransferModel
import TransferStore
@testable import TransferAPI

/// Where each test says a session is held.
struct TablePlacement: SessionPlacement {
    let holders: [String: String]

    /// Sessions whose identifier starts with a key are held at its address; the rest here. Of
    /// those whose identifier has "-lookup-" in it, only the store knows.
    func knownPlace(_ session: String) -> SessionPlace? {
        session.contains("-lookup-") ? nil : lookUp(session)
    }

    func lookUp(_ session: String) -> SessionPlace {
        if session.hasPrefix("s-moving") { return .moving }
        if session.hasPrefix("s-unknown") { return .unknown }
        for (prefix, address) in holders where session.hasPrefix(prefix) { return .replica(address: address) }
        return .here
    }
}

/// Two replicas in this process, on loopback: A, a whole API (its own core on an in-memory store)
/// that forwards by `TablePlacement`; B, the holder, a server of ours that records each request it
/// gets and answers with what it got, and serves a file the way task files are served.
final class ReplicaPair: @unchecked Sendable {
    static let token = "forwarding-test-token"
    /// What the replicas of the test share, as a cluster's share their resume key.
    static let secret = Array("the replicas' shared secret".utf8)
    /// The bytes of B's file: big enough to be relayed rather than collected.
    static let file = (0..<(6 * 1024 * 1024 + 123)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
    /// As the service does at start: curl initialised once, and a write to a closed socket an
    /// error rather than the end of the process (B's sendfile to a relay that was abandoned).
    private static let processReady: Void = {
        signal(SIGPIPE, SIG_IGN)
        TransferEngine.globalInit()
    }()

    let holder: HTTPServer
    let replica: HTTPServer
    let forwarder: ReplicaForwarder
    private let engine: TransferEngine
    private let coordinator: TaskCoordinator
    /// The store A shares with B, as replicas share PostgreSQL.
    private let sharedStore = InMemoryTransferStore()
    private let directory: String
    /// The length of B's task body: more than a replica buffers for a client that does not read.
    static let bodyLength = 48 * 1024 * 1024
    /// What B received, by request id.
    let received = Locked<[String: HTTPRequest]>([:])
    /// Requests B keeps unanswered, as a holder busy with them would.
    let held = Locked<[Responder]>([])
    /// The remote address of every request B got: one per connection A opened to it.
    let holderPeers = Locked<Set<String>>([])

    var holderAddress: String { "127.0.0.1:\(holder.boundAddress.port)" }
    var replicaPort: UInt16 { replica.boundAddress.port }

    /// `holders`: session prefixes and where they are held; "s-b" is B unless given otherwise.
    init(limits: ReplicaForwarder.Limits = ReplicaForwarder.Limits(), holders: [String: String] = [:]) throws {
        Self.processReady
        var logger = Logger(label: "forwarding-test")
        logger.logLevel = .critical
        let received = received, holderPeers = holderPeers, held = held
        holder = try HTTPServer(configuration: Self.configuration(), router: Router { table in
            ReplicaPair.holderRoutes(&table, received: received, peers: holderPeers)
            table.add("GET", "/v1/sessions/{identifier}/cookies") { request, responder in
                received.withLock { $0[request.id] = request }
                held.withLock { $0.append(responder) }
            }
        }, logger: logger)

        var template = Array("/tmp/transferd-forwarding-XXXXXX".utf8CString)
        directory = String(cString: mkdtemp(&template)!)
        engine = TransferEngine(loopCount: 1, policy: NetworkPolicy(parsing: "default")!)
        let layout = DataLayout(root: directory)
        let roots = try AllowedRoots(paths: [directory])
        coordinator = TaskCoordinator(store: sharedStore, blobs: nil, engine: engine, layout: layout, allowedRoots: roots,
                                      limits: TaskCoordinator.Limits(), resumeKey: try ResumeKey.load(directory: layout.root),
                                      logger: logger)
        try coordinator.recover()
        // As in cluster mode: the store is the replicas' shared one (sessions B holds are there).
        coordinator.sharesStore = true
        let gate = AccessGate(directory: PrincipalDirectory(apiTokens: [Self.token], authFile: nil, roots: roots), audit: logger)
        let forwarder = ReplicaForwarder(advertisedAddress: "127.0.0.1:7001", proof: ForwardingProof(secret: Self.secret), limits: limits)
        self.forwarder = forwarder
        let placement = TablePlacement(holders: ["s-b": "127.0.0.1:\(holder.boundAddress.port)"].merging(holders) { $1 })
        let routes = APIRoutes(coordinator: coordinator, gate: gate, rates: TransferRates(engine: engine, clock: coordinator.clock),
                               version: "test", startedAt: Timestamp.now(), maxBlobBytes: 1 << 20, sseHeartbeat: 15,
                               forwarding: SessionForwarding(placement: placement, forwarder: forwarder))
        replica = try HTTPServer(configuration: Self.configuration(), router: Router { routes.register(in: &$0) }, logger: logger)
    }

    /// A session as B would have stored it in the shared store (A does not hold it).
    func storeSession(_ identifier: String, mode: String) throws {
        let done = ThreadSignal()
        let result = Locked<Result<CommitReport, Error>?>(nil)
        sharedStore.commit([.upsertSession(StoredSession(identifier: identifier, mode: mode, configuration: "{}", lifecycle: "active",
                                                         createdAt: Timestamp.now().milliseconds))]) { outcome in
            result.withLock { $0 = outcome }
            done.post()
        }
        done.wait()
        _ = try result.withLock { $0 }!.get()
    }

    func shutdown() {
        replica.shutdown()
        forwarder.shutdown()
        // Taken out, not only answered: a responder holds its connection, which holds the
        // server whose routes hold this list.
        let release = held.withLock { list in
            defer { list = [] }
            return list
        }
        for responder in release { responder.respond(.text("released")) }
        holder.shutdown()
        engine.shutdown()
        coordinator.shutdown()
        DataLayout.removeTree(directory)
    }

    private static func configuration() -> HTTPServerConfiguration {
        var configuration = HTTPServerConfiguration(address: SocketAddress("127.0.0.1:0")!, loopCount: 2)
        configuration.shutdownGrace = 3
        return configuration
    }

    /// B's answers depend only on the request's method, path and body, so the same request made
    /// to B directly and through A must come back the same.
    private static func holderRoutes(_ table: inout RouteTable, received: Locked<[String: HTTPRequest]>, peers: Locked<Set<String>>) {
        let record: @Sendable (HTTPRequest) -> Void = { request in
            received.withLock { $0[request.id] = request }
            _ = peers.withLock { $0.insert(request.remoteAddress) }
        }
        let echo: RequestHandler = { request, responder in
            record(request)
            if let status = request.headers["x-test-status"].flatMap({ Int($0) }) {
                return responder.respond(.problem(HTTPProblem(status, "test_problem", "asked for \(status)")))
            }
            var headers = HTTPHeaders()
            headers.add("Content-Type", "application/json")
            headers.add("ETag", "\"\(request.method.count)-\(request.body.count)\"")
            headers.add("Location", "/v1/sessions/\(request.parameters["identifier"] ?? "")")
            headers.add("Cache-Control", "no-store")
            headers.add("X-Holder-Field", "one")
            headers.add("X-Holder-Field", "two")
            let body = Array("{\"method\":\"\(request.method)\",\"target\":\"\(request.head.target)\",\"echo\":".utf8) + request.body + Array("}".utf8)
            responder.respond(HTTPResponse(status: request.method == "POST" ? 201 : 200, headers: headers, body: .bytes(body)))
        }
        for method in ["GET", "PUT", "PATCH", "DELETE"] { table.add(method, "/v1/sessions/{identifier}", echo) }
        table.add("POST", "/v1/sessions/{identifier}/tasks", echo)
        // A long poll: answered once the wait it asked for is over.
        table.add("GET", "/v1/sessions/{identifier}/tasks/{task}") { request, responder in
            record(request)
            let wait = request.query("wait").flatMap(Double.init).flatMap { $0.isFinite ? $0 : nil } ?? 0
            DispatchQueue.global().asyncAfter(deadline: .now() + wait) { responder.respond(.text("waited \(wait)")) }
        }
        table.add("GET", "/v1/sessions/{identifier}/tasks/{task}/file") { request, responder in
            record(request)
            let fd = ReplicaPair.openFile()
            responder.respond(HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/octet-stream"),
                                                                              ("ETag", "\"file-1\"")]),
                                           body: .file(FileRegion(fd: fd, offset: 0, count: ReplicaPair.file.count))))
        }
        table.add("GET", "/v1/sessions/{identifier}/tasks/{task}/body") { request, responder in
            record(request)
            let fd = ReplicaPair.openTemporary()
            ftruncate(fd, off_t(ReplicaPair.bodyLength))
            responder.respond(HTTPResponse(body: .file(FileRegion(fd: fd, offset: 0, count: ReplicaPair.bodyLength))))
        }
    }

    /// The file, on disk as a task's file would be, opened for one response (which closes it).
    private static func openFile() -> Int32 {
        let fd = openTemporary()
        _ = file.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        return fd
    }

    private static func openTemporary() -> Int32 {
        var template = Array("/tmp/transferd-forwarded-file-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return fd
    }
}
