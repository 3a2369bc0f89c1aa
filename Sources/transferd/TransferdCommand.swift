import ArgumentParser
import Glibc
import Logging
import Prometheus
import TransferService

/// The command line. Every option also reads a `TRANSFERD_*` environment variable, resolved (and
/// validated) by `ConfigurationResolver`; a flag wins over its variable.
struct TransferdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transferd",
        abstract: "Background transfers as a service: hand over downloads and uploads over HTTP, get told when they finish.",
        version: Service.version)

    @Option(help: "Address to serve the API on, host:port or [v6]:port. Env: TRANSFERD_LISTEN. [127.0.0.1:8080]")
    var listen: String?

    @Option(name: .customLong("data-dir"), help: "Directory for the database and transferred files. Env: TRANSFERD_DATA_DIR. [./transferd-data]")
    var dataDir: String?

    @Option(help: "PostgreSQL URL (postgres://user:password@host:5432/db) to keep state in instead of SQLite in the data directory. Env: TRANSFERD_DATABASE.")
    var database: String?

    @Option(name: .customLong("advertise-address"), help: "Cluster mode: host:port where the other replicas reach this one. Env: TRANSFERD_ADVERTISE_ADDRESS. [the listen address]")
    var advertiseAddress: String?

    @Option(name: .customLong("lease-timeout"), help: "Cluster mode: how long a dead replica's sessions wait before another takes them over. Env: TRANSFERD_LEASE_TIMEOUT. [15s]")
    var leaseTimeout: String?

    @Option(name: .customLong("api-token"), help: "Bearer token required on /v1 (repeatable or comma-separated). Env: TRANSFERD_API_TOKEN.")
    var apiToken: [String] = []

    @Option(name: .customLong("api-token-file"), help: "File with one token per line. Env: TRANSFERD_API_TOKEN_FILE.")
    var apiTokenFile: String?

    @Option(name: .customLong("auth-file"), help: "JSON file of principals (token hashes, roles, namespaces, limits); re-read on SIGHUP. Env: TRANSFERD_AUTH_FILE.")
    var authFile: String?

    @Option(name: .customLong("default-digests"), help: "Digests a download computes unless it names its own: comma-separated from sha256, sha512, sha1, md5, crc32c; empty for none. Env: TRANSFERD_DEFAULT_DIGESTS. [sha256]")
    var defaultDigests: String?

    @Option(name: .customLong("allow-path"), help: "Root that from_file and download destinations may use (repeatable). Env: TRANSFERD_ALLOW_PATHS (comma-separated).")
    var allowPath: [String] = []

    @Option(name: .customLong("network-policy"), help: "default, public-only, or allow=CIDR,…;deny=CIDR,…. Env: TRANSFERD_NETWORK_POLICY.")
    var networkPolicy: String?

    @Option(help: "How long completed tasks and their files are kept, e.g. 7d. Env: TRANSFERD_RETENTION.")
    var retention: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical. Env: TRANSFERD_LOG_LEVEL. [info]")
    var logLevel: String?

    @Option(name: .customLong("max-connections"), help: "Most client connections at once. Env: TRANSFERD_MAX_CONNECTIONS. [10000]")
    var maxConnections: String?

    @Option(name: .customLong("max-request-line"), help: "Longest request line in bytes (414 beyond). Env: TRANSFERD_MAX_REQUEST_LINE. [8192]")
    var maxRequestLine: String?

    @Option(name: .customLong("max-header-bytes"), help: "Largest header section in bytes (431 beyond). Env: TRANSFERD_MAX_HEADER_BYTES. [32768]")
    var maxHeaderBytes: String?

    @Option(name: .customLong("max-body-bytes"), help: "Largest JSON request body in bytes (413 beyond). Env: TRANSFERD_MAX_BODY_BYTES. [1048576]")
    var maxBodyBytes: String?

    @Option(name: .customLong("header-timeout"), help: "Time allowed to send a request head. Env: TRANSFERD_HEADER_TIMEOUT. [10s]")
    var headerTimeout: String?

    @Option(name: .customLong("body-timeout"), help: "Longest pause while sending a request body. Env: TRANSFERD_BODY_TIMEOUT. [60s]")
    var bodyTimeout: String?

    @Option(name: .customLong("idle-timeout"), help: "How long an idle keep-alive connection stays open. Env: TRANSFERD_IDLE_TIMEOUT. [75s]")
    var idleTimeout: String?

    @Option(name: .customLong("max-requests-per-connection"), help: "Requests served on one connection before it closes. Env: TRANSFERD_MAX_REQUESTS_PER_CONNECTION. [1000]")
    var maxRequestsPerConnection: String?

    @Option(name: .customLong("http-threads"), help: "Event-loop threads for the API (0: one per core). Env: TRANSFERD_HTTP_THREADS. [0]")
    var httpThreads: String?

    @Option(name: .customLong("max-data-body-bytes"), help: "Largest response body a data task keeps. Env: TRANSFERD_MAX_DATA_BODY_BYTES. [67108864]")
    var maxDataBodyBytes: String?

    @Option(name: .customLong("max-blob-bytes"), help: "Largest blob POST /v1/blobs accepts. Env: TRANSFERD_MAX_BLOB_BYTES. [68719476736]")
    var maxBlobBytes: String?

    @Option(name: .customLong("sweep-interval"), help: "How often expired tasks, files and blobs are swept. Env: TRANSFERD_SWEEP_INTERVAL. [10m]")
    var sweepInterval: String?

    @Option(name: .customLong("webhook-retry-schedule"), help: "Delays before each webhook attempt, comma-separated. Env: TRANSFERD_WEBHOOK_RETRY_SCHEDULE. [0,5s,5m,30m,2h,5h,10h,14h,20h,24h]")
    var webhookRetrySchedule: String?

    @Option(name: .customLong("max-bytes-per-second"), help: "Body bytes per second across all transfers. Env: TRANSFERD_MAX_BYTES_PER_SECOND. [unlimited]")
    var maxBytesPerSecond: String?

    @Option(name: .customLong("max-running-transfers"), help: "Transfers running at once; sessions take turns for the rest. Env: TRANSFERD_MAX_RUNNING_TRANSFERS. [10000]")
    var maxRunningTransfers: String?

    @Option(name: .customLong("sse-heartbeat"), help: "Time between Server-Sent Events heartbeats. Env: TRANSFERD_SSE_HEARTBEAT. [15s]")
    var sseHeartbeat: String?

    @Option(name: .customLong("shutdown-grace"), help: "After SIGTERM, how long /readyz answers 503 while requests are still served. Env: TRANSFERD_SHUTDOWN_GRACE. [0]")
    var shutdownGrace: String?

    @Option(name: .customLong("shutdown-timeout"), help: "From SIGTERM, the longest a shutdown may take before the process exits. Env: TRANSFERD_SHUTDOWN_TIMEOUT. [25s]")
    var shutdownTimeout: String?

    @Option(name: .customLong("direct-writes"), help: "on: downloads of 16 MiB or more are written with O_DIRECT where the file system takes it; off: every download goes through the page cache. Env: TRANSFERD_DIRECT_WRITES. [on]")
    var directWrites: String?

    @Flag(name: .customLong("check-config"), help: "Check the flags, the auth file, the allowed roots and the data directory, print the outcome and exit (0: valid, 2: not).")
    var checkConfig = false

    var rawSettings: RawSettings {
        var raw = RawSettings()
        raw.listen = listen
        raw.dataDir = dataDir
        raw.database = database
        raw.advertiseAddress = advertiseAddress
        raw.leaseTimeout = leaseTimeout
        raw.apiTokens = apiToken
        raw.apiTokenFile = apiTokenFile
        raw.authFile = authFile
        raw.defaultDigests = defaultDigests
        raw.allowPaths = allowPath
        raw.networkPolicy = networkPolicy
        raw.retention = retention
        raw.logLevel = logLevel
        raw.maxConnections = maxConnections
        raw.maxRequestLine = maxRequestLine
        raw.maxHeaderBytes = maxHeaderBytes
        raw.maxBodyBytes = maxBodyBytes
        raw.headerTimeout = headerTimeout
        raw.bodyTimeout = bodyTimeout
        raw.idleTimeout = idleTimeout
        raw.maxRequestsPerConnection = maxRequestsPerConnection
        raw.httpThreads = httpThreads
        raw.maxDataBodyBytes = maxDataBodyBytes
        raw.maxBlobBytes = maxBlobBytes
        raw.sweepInterval = sweepInterval
        raw.webhookRetrySchedule = webhookRetrySchedule
        raw.maxBytesPerSecond = maxBytesPerSecond
        raw.maxRunningTransfers = maxRunningTransfers
        raw.directWrites = directWrites
        raw.sseHeartbeat = sseHeartbeat
        raw.shutdownGrace = shutdownGrace
        raw.shutdownTimeout = shutdownTimeout
        return raw
    }
}
