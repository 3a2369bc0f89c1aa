import CLinux
import Glibc
import HTTPServer
import Logging
import Prometheus

/// transferd as one object: builds the routes and the HTTP server from a configuration, runs until
/// SIGTERM or SIGINT, then shuts down gracefully.
public final class Service: Sendable {
    public static let version = "0.1.0"

    private let configuration: ServiceConfiguration
    private let logger: Logger
    private let server: HTTPServer
    private let readiness = Readiness()

    /// The address the API is served on (with the real port when port 0 was asked for).
    public var address: SocketAddress { server.boundAddress }

    public init(configuration: ServiceConfiguration, logger: Logger, metrics: PrometheusCollectorRegistry) throws {
        self.configuration = configuration
        self.logger = logger
        let startedAt = Timestamp.now()
        let auth = Authenticator(tokens: configuration.apiTokens)
        let processMetrics = ProcessMetrics(registry: metrics, startTime: startedAt)
        let readiness = readiness
        let router = Router { table in
            OperationsRoutes(readiness: readiness, metrics: metrics, collectProcessMetrics: processMetrics.collect)
                .register(in: &table)
            APIRoot(version: Service.version, startedAt: startedAt).register(in: &table, guard: auth.check)
        }
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        server = try HTTPServer(configuration: configuration.serverConfiguration(loops: max(1, cores)),
                                router: router, logger: logger)
        readiness.register("http") { true }
        if !auth.isEnabled {
            logger.warning("no API token configured: serving loopback only, without authentication",
                           metadata: ["listen": .string(server.boundAddress.description)])
        }
        logger.info("listening", metadata: [
            "address": .string(server.boundAddress.description),
            "version": .string(Service.version),
            "data_dir": .string(configuration.dataDirectory),
        ])
    }

    /// Stops accepting, lets in-flight responses finish, and releases everything.
    public func shutdown() {
        readiness.markStopping()
        logger.info("shutting down", metadata: ["open_connections": .stringConvertible(server.openConnections)])
        server.shutdown()
        logger.info("stopped")
    }

    /// Blocks the calling thread until SIGTERM or SIGINT arrives. Call `blockTerminationSignals`
    /// before any thread starts, so that only this `sigwait` sees them.
    public static func waitForTerminationSignal() -> Int32 {
        var set = terminationSignals()
        var received: Int32 = 0
        while sigwait(&set, &received) != 0 {}
        return received
    }

    /// Blocks SIGTERM and SIGINT in the calling thread and every thread it creates later, and
    /// ignores SIGPIPE (writes to a closed socket must fail with EPIPE, not kill the process).
    public static func blockTerminationSignals() {
        signal(SIGPIPE, SIG_IGN)
        var set = terminationSignals()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    private static func terminationSignals() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        return set
    }
}
