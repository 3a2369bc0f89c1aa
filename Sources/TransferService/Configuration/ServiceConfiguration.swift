import Digests
import HTTPServer

/// Everything transferd is configured with, validated. Built by `ConfigurationResolver` from flags
/// and `TRANSFERD_*` environment variables (README.md lists them).
public struct ServiceConfiguration: Sendable {
    public var listen: SocketAddress
    public var dataDirectory: String
    /// A `postgres://` URL: the store is that PostgreSQL database (cluster mode) instead of the
    /// SQLite file in the data directory, which stays the default (nil).
    public var database: String?
    /// Cluster mode's settings, present exactly when `database` is.
    public var cluster: ClusterSettings?
    /// Bearer tokens accepted on `/v1`, as admins. With no auth file either, there is no
    /// authentication, which is allowed only on a loopback address.
    public var apiTokens: [String]
    /// The auth file of principals (`--auth-file`), re-read on SIGHUP.
    public var authFile: String?
    /// Roots under which `from_file` and `download.destination` may lie.
    public var allowedPaths: [String]
    public var networkPolicy: String
    /// Seconds a completed task, its body and files are kept.
    public var retention: Double
    public var logLevel: String
    public var http: HTTPLimits
    /// Largest response body a data task keeps (larger fails with data_length_exceeds_maximum).
    public var maxDataBodyBytes: Int64 = 64 << 20
    /// Delays before each webhook attempt (immediately, 5 s, 5 min, … 24 h, unless shortened for tests).
    public var webhookSchedule: [Double] = [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
    /// Seconds between Server-Sent Events heartbeats (comments that keep proxies from closing a
    /// quiet stream).
    public var sseHeartbeat: Double = 15
    /// After SIGTERM/SIGINT: how long `/readyz` answers 503 while everything else is still
    /// served, for load balancers to notice, before the listener closes.
    public var shutdownGrace: Double = 0
    /// From the signal, how long the whole shutdown may take before the process exits anyway.
    public var shutdownTimeout: Double = 25
    /// How often expired things are swept.
    public var sweepInterval: Double = 600
    /// Largest blob `POST /v1/blobs` accepts (413 beyond).
    public var maxBlobBytes: Int64 = 64 << 30
    /// Body bytes per second across all transfers (nil: unlimited); sessions may limit themselves further.
    public var maxBytesPerSecond: Int64?
    /// What a download computes when it does not say (`download.digests`).
    public var defaultDigests: [DigestAlgorithm] = [.sha256]
    /// Transfers running at once across all sessions; the rest wait, sessions taking turns.
    public var maxRunningTransfers = 10_000
    /// Large downloads written with O_DIRECT (`--direct-writes`).
    public var directWrites = true

    /// The HTTP server's limits, each with a flag and an environment variable.
    public struct HTTPLimits: Sendable {
        public var maxConnections = 10_000
        public var maxRequestLineBytes = 8 * 1024
        public var maxHeaderBytes = 32 * 1024
        public var maxBodyBytes = 1024 * 1024
        public var headerTimeout: Double = 10
        public var bodyTimeout: Double = 60
        public var idleTimeout: Double = 75
        public var maxRequestsPerConnection = 1000
        public var threads = 0
    }

    public var requiresAuthentication: Bool { !apiTokens.isEmpty || authFile != nil }

    public func serverConfiguration(loops: Int) -> HTTPServerConfiguration {
        var c = HTTPServerConfiguration(address: listen, loopCount: http.threads > 0 ? http.threads : loops)
        c.maxConnections = http.maxConnections
        c.maxRequestLineBytes = http.maxRequestLineBytes
        c.maxHeaderBytes = http.maxHeaderBytes
        c.maxBufferedBodyBytes = http.maxBodyBytes
        c.headerTimeout = http.headerTimeout
        c.bodyTimeout = http.bodyTimeout
        c.idleTimeout = http.idleTimeout
        c.maxRequestsPerConnection = http.maxRequestsPerConnection
        return c
    }
}
