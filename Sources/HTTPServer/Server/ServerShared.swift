import CoreMetrics
import Dispatch
import Glibc
import Logging
import Synchronization

/// What every worker of one server shares: configuration, routes, the listening socket, and the
/// connection count that enforces `maxConnections` across loops.
final class ServerShared: @unchecked Sendable {
    let configuration: HTTPServerConfiguration
    let router: Router
    let logger: Logger
    let listenFD: Int32
    private(set) var workers: [ServerWorker] = []
    private let openConnections = Atomic<Int>(0)
    private let shuttingDown = Atomic<Bool>(false)
    private let connectionsGauge = Gauge(label: "http_open_connections")
    /// Where handlers of large bodies run (`HTTPServerConfiguration.offloadBodyBytes`).
    let offloadedHandlers = DispatchQueue(label: "http.large-bodies", qos: .userInitiated, attributes: .concurrent)

    init(configuration: HTTPServerConfiguration, router: Router, logger: Logger, listenFD: Int32) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        self.listenFD = listenFD
    }

    func setWorkers(_ workers: [ServerWorker]) { self.workers = workers }

    var connectionCount: Int { openConnections.load(ordering: .relaxed) }

    var isShuttingDown: Bool { shuttingDown.load(ordering: .acquiring) }

    /// Marks the server as shutting down; false when it already was.
    func beginShutdown() -> Bool {
        !shuttingDown.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// Counts a new connection in; false when the server is full.
    func admitConnection() -> Bool {
        let after = openConnections.add(1, ordering: .relaxed).newValue
        if after > configuration.maxConnections {
            openConnections.subtract(1, ordering: .relaxed)
            return false
        }
        connectionsGauge.record(after)
        return true
    }

    func releaseConnection() {
        let after = openConnections.subtract(1, ordering: .relaxed).newValue
        connectionsGauge.record(after)
    }
}
