import CLinux
import Glibc
import HTTPServer
import Logging
import Prometheus
import PostgresStore
import TransferAPI
import TransferCore
import TransferEngine
import TransferModel
import TransferStore

/// transferd as one object: builds the routes and the HTTP server from a configuration, runs until
/// SIGTERM or SIGINT (re-reading the auth file on SIGHUP), then shuts down gracefully.
public final class Service: Sendable {
    public static let version = TransferdVersion.current

    let configuration: ServiceConfiguration
    let logger: Logger
    private let server: HTTPServer
    private let readiness = Readiness()
    let coordinator: TaskCoordinator
    let engine: TransferEngine
    private let store: any TransferStore
    /// One process per data directory — except in cluster mode, whose replicas share theirs.
    private let dataLock: DataDirectoryLock?
    /// Cluster mode (`--database`): this replica's leases, forwarding and notifications.
    private let cluster: ClusterRole?
    /// Who may call the API; replaced when the auth file is reloaded.
    let principals: PrincipalDirectory

    /// The address the API is served on (with the real port when port 0 was asked for).
    public var address: SocketAddress { server.boundAddress }

    public init(configuration: ServiceConfiguration, logger: Logger, metrics: PrometheusCollectorRegistry) throws {
        self.configuration = configuration
        self.logger = logger
        let startedAt = Timestamp.now()
        // Before any thread of ours exists: curl_global_init is not thread-safe.
        TransferEngine.globalInit()
        let descriptors = Service.raiseFileLimit()
        Service.fixMmapThreshold()
        let cores = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        let layout = DataLayout(root: AllowedRoots.normalize(configuration.dataDirectory.hasPrefix("/")
            ? configuration.dataDirectory : Service.currentDirectory() + "/" + configuration.dataDirectory))
        try DataLayout.makeDirectories(layout.root)
        dataLock = configuration.cluster == nil ? try DataDirectoryLock(root: layout.root) : nil
        guard let policy = NetworkPolicy(parsing: configuration.networkPolicy) else {
            throw ConfigurationError("invalid --network-policy '\(configuration.networkPolicy)'")
        }
        let roots: AllowedRoots, authFile: AuthFile?
        do {
            roots = try AllowedRoots(paths: configuration.allowedPaths)
            authFile = try configuration.authFile.map { path throws(AuthFile.Invalid) in try AuthFile.load(path: path, roots: roots) }
        } catch let error as AllowedRoots.UnusableRoot {
            throw ConfigurationError(error.description)
        } catch let error as AuthFile.Invalid {
            throw ConfigurationError("--auth-file \(error.description)")
        }
        principals = PrincipalDirectory(apiTokens: configuration.apiTokens, authFile: authFile, roots: roots)
        let serviceMetrics = Service.metrics(registry: metrics, principals: authFile == nil ? nil : principals)
        let replica = ClusterRole.replicaIdentifier()
        store = try Service.openStore(configuration, path: layout.databasePath, replica: replica,
                                      observeCommit: { serviceMetrics.commitTook(nanoseconds: $0) })
        // Cluster mode: the replicas share the data directory, and the leases fence its files too.
        engine = TransferEngine(loopCount: cores, policy: policy, maxRunning: configuration.maxRunningTransfers,
                                maxBytesPerSecond: configuration.maxBytesPerSecond, bandwidthGroups: principals,
                                directWrites: configuration.directWrites, fence: configuration.cluster == nil ? nil : WriteFence())
        // Shared by a cluster's replicas (one data directory): it also keys their forwarding proofs.
        let resumeKey = try ResumeKey.load(directory: layout.root)
        coordinator = TaskCoordinator(store: store, blobs: try BlobStore(directory: layout.blobsDirectory, store: store),
                                      engine: engine, layout: layout, allowedRoots: roots,
                                      limits: TaskCoordinator.Limits(maxDataBodyBytes: configuration.maxDataBodyBytes,
                                                                     webhookSchedule: configuration.webhookSchedule,
                                                                     defaultDigests: configuration.defaultDigests),
                                      resumeKey: resumeKey,
                                      logger: logger, metrics: serviceMetrics)
        if let settings = configuration.cluster, let url = configuration.database, let shared = store as? PostgresTransferStore {
            // Sessions come into memory as their leases are taken, not all at start.
            cluster = ClusterRole(settings: settings, replica: replica, url: url, store: shared, coordinator: coordinator,
                                  principals: principals, secret: resumeKey, logger: logger)
        } else {
            cluster = nil
            try coordinator.recover()
        }
        coordinator.startProgressFlushing()
        coordinator.startProgressEvents()
        RetentionSweeper(coordinator: coordinator, retention: configuration.retention,
                         interval: configuration.sweepInterval).start()

        let processMetrics = ProcessMetrics(registry: metrics, startTime: startedAt)
        let readiness = readiness
        let coordinator = coordinator
        let gate = AccessGate(directory: principals, audit: logger, forwarded: cluster?.forwarder.proof)
        let rates = TransferRates(engine: engine, clock: coordinator.clock)
        let forwarding = cluster?.forwarding
        let router = Router { table in
            OperationsRoutes(readiness: readiness, metrics: metrics, collect: {
                processMetrics.collect()
                coordinator.collectMetrics()
            })
                .register(in: &table)
            ConsoleRoutes().register(in: &table)
            APIRoutes(coordinator: coordinator, gate: gate, rates: rates, version: Service.version,
                      startedAt: startedAt, maxBlobBytes: configuration.maxBlobBytes,
                      sseHeartbeat: configuration.sseHeartbeat, forwarding: forwarding).register(in: &table)
        }
        var serverConfiguration = configuration.serverConfiguration(loops: cores)
        let connectionCap = Service.connectionCap(descriptors: descriptors)
        if serverConfiguration.maxConnections > connectionCap {
            logger.notice("--max-connections lowered to stay below the descriptor limit", metadata: [
                "configured": .stringConvertible(serverConfiguration.maxConnections), "max_connections": .stringConvertible(connectionCap),
                "descriptor_limit": .stringConvertible(descriptors)])
            serverConfiguration.maxConnections = connectionCap
        }
        server = try HTTPServer(configuration: serverConfiguration, router: router, logger: logger)
        readiness.register("http") { true }
        let store = store
        readiness.register("store", runsOn: store.submitRead) { store.isAvailable() }
        if let cluster {
            cluster.start()
            readiness.register("leases") { [membership = cluster.membership] in membership.holdsLeases }
        }
        if !principals.requiresAuthentication {
            logger.warning("no API token configured: serving loopback only, without authentication",
                           metadata: ["listen": .string(server.boundAddress.description)])
        }
        logger.info("listening", metadata: [
            "address": .string(server.boundAddress.description),
            "version": .string(Service.version),
            "data_dir": .string(configuration.dataDirectory),
        ])
    }

    /// The first moment of a shutdown: `/readyz` answers 503 at once, so load balancers stop
    /// sending, while every other request is still served (`--shutdown-grace`).
    public func beginShutdown() {
        readiness.markStopping()
    }

    /// Answers open long-polls with what there is, stops accepting, lets in-flight responses
    /// finish and ends event streams, stops transfers (keeping what they wrote, for background
    /// tasks to continue at the next start), commits what is pending.
    public func shutdown() {
        beginShutdown()
        logger.info("shutting down", metadata: ["open_connections": .stringConvertible(server.openConnections)])
        coordinator.endWaits()
        server.shutdown()
        engine.shutdown()
        coordinator.fileWork.sync(flags: .barrier) {}
        coordinator.shutdown()
        cluster?.stop()
        store.close()
        logger.info("stopped")
    }

    /// With tenants (an auth file), tasks and bytes are counted by the principal owning the session.
    private static func metrics(registry: PrometheusCollectorRegistry, principals: PrincipalDirectory?) -> ServiceMetrics {
        guard let principals else { return ServiceMetrics(registry: registry) }
        return ServiceMetrics(registry: registry, principalOf: { principals.owner(ofSession: $0) })
    }

    /// Transfers and connections each hold descriptors; the soft limit (often 1024) is raised to
    /// the hard one. Returns the limit in force.
    private static func raiseFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            let wanted = limit.rlim_max
            limit.rlim_cur = wanted
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 { _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// The most client connections the descriptor limit leaves room for. A connection accepted
    /// past the limit cannot be answered at all (accept fails with EMFILE and clients wait in the
    /// backlog), while one past `maxConnections` is answered 503 at once; so `maxConnections`
    /// stays below the limit, keeping a quarter of it (at least 64) for transfers, files, the
    /// database and the listeners.
    static func connectionCap(descriptors: Int) -> Int {
        max(1, descriptors - max(64, descriptors / 4))
    }

    /// Allocations of 128 KiB and more (curl's receive buffers, listing pages, request bodies) are
    /// mapped and unmapped, and so returned to the system as they are freed. glibc's default raises
    /// that threshold to the size of each mapped block freed, up to 32 MiB, after which such
    /// buffers come from the heap and their pages stay resident once freed: 11 MB more resident
    /// after 100,000 small tasks, at no measurable cost in CPU.
    private static func fixMmapThreshold() {
        mallopt(M_MMAP_THRESHOLD, 128 * 1024)
    }

    static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
