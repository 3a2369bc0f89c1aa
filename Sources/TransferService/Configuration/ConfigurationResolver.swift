import Digests
import TransferModel
import Reactor
import Glibc
import HTTPServer
import Postgres
import TransferEngine

/// A setting as given on the command line; nil when the flag was absent.
public struct RawSettings: Sendable {
    public var listen: String?
    public var dataDir: String?
    public var database: String?
    public var advertiseAddress: String?
    public var leaseTimeout: String?
    public var apiTokens: [String] = []
    public var apiTokenFile: String?
    public var authFile: String?
    public var defaultDigests: String?
    public var allowPaths: [String] = []
    public var networkPolicy: String?
    public var retention: String?
    public var logLevel: String?
    public var maxConnections: String?
    public var maxRequestLine: String?
    public var maxHeaderBytes: String?
    public var maxBodyBytes: String?
    public var headerTimeout: String?
    public var bodyTimeout: String?
    public var idleTimeout: String?
    public var maxRequestsPerConnection: String?
    public var httpThreads: String?
    public var maxDataBodyBytes: String?
    public var maxBlobBytes: String?
    public var sweepInterval: String?
    public var webhookRetrySchedule: String?
    public var maxBytesPerSecond: String?
    public var maxRunningTransfers: String?
    public var directWrites: String?
    public var sseHeartbeat: String?
    public var shutdownGrace: String?
    public var shutdownTimeout: String?

    public init() {}
}

/// A setting's value and where it came from (a flag or an environment variable), for messages.
struct Setting {
    let value: String
    let name: String
}

public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Turns flags and environment variables into a validated `ServiceConfiguration`. A flag wins over
/// its environment variable, which wins over the default; every value is checked here, at start,
/// so a bad one stops the process with a message instead of misbehaving later.
public enum ConfigurationResolver {
    public static func resolve(_ raw: RawSettings, environment: [String: String]) throws(ConfigurationError) -> ServiceConfiguration {
        /// The flag's value, else the variable's, with the name to blame in a message.
        func pick(_ flag: String?, _ flagName: String, _ variable: String) -> Setting? {
            if let flag { return Setting(value: flag, name: flagName) }
            if let value = environment[variable], !value.isEmpty { return Setting(value: value, name: variable) }
            return nil
        }

        let listenSetting = pick(raw.listen, "--listen", "TRANSFERD_LISTEN") ?? Setting(value: "127.0.0.1:8080", name: "--listen")
        guard let listen = SocketAddress(listenSetting.value) else {
            throw ConfigurationError("invalid \(listenSetting.name) '\(listenSetting.value)': expected IPv4:port or [IPv6]:port, e.g. 127.0.0.1:8080")
        }

        let tokens = try resolveTokens(raw, pick(raw.apiTokenFile, "--api-token-file", "TRANSFERD_API_TOKEN_FILE"), environment)
        let authFile = pick(raw.authFile, "--auth-file", "TRANSFERD_AUTH_FILE")?.value
        if tokens.isEmpty && authFile == nil && !listen.isLoopback {
            throw ConfigurationError(
                "refusing to listen on \(listen) without authentication: set --auth-file, --api-token, TRANSFERD_API_TOKEN or --api-token-file, or listen on a loopback address")
        }

        var allowed = raw.allowPaths.flatMap(splitList)
        var allowedName = "--allow-path"
        if allowed.isEmpty, let env = environment["TRANSFERD_ALLOW_PATHS"] {
            allowed = splitList(env)
            allowedName = "TRANSFERD_ALLOW_PATHS"
        }
        for path in allowed where !path.hasPrefix("/") {
            throw ConfigurationError("invalid \(allowedName) '\(path)': must be an absolute path")
        }

        let policy = pick(raw.networkPolicy, "--network-policy", "TRANSFERD_NETWORK_POLICY")
            ?? Setting(value: "default", name: "--network-policy")
        try checkNetworkPolicy(policy)

        let retentionSetting = pick(raw.retention, "--retention", "TRANSFERD_RETENTION") ?? Setting(value: "7d", name: "--retention")
        guard let retention = parseDuration(retentionSetting.value), retention > 0 else {
            throw ConfigurationError("invalid \(retentionSetting.name) '\(retentionSetting.value)': expected a duration such as 7d, 12h, 30m or 3600s")
        }

        let levelSetting = pick(raw.logLevel, "--log-level", "TRANSFERD_LOG_LEVEL") ?? Setting(value: "info", name: "--log-level")
        let level = levelSetting.value.lowercased()
        guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(level) else {
            throw ConfigurationError("invalid \(levelSetting.name) '\(levelSetting.value)': expected trace, debug, info, notice, warning, error or critical")
        }

        var http = ServiceConfiguration.HTTPLimits()
        http.maxConnections = try integer(pick(raw.maxConnections, "--max-connections", "TRANSFERD_MAX_CONNECTIONS"), http.maxConnections, 1...1_000_000)
        http.maxRequestLineBytes = try integer(pick(raw.maxRequestLine, "--max-request-line", "TRANSFERD_MAX_REQUEST_LINE"), http.maxRequestLineBytes, 256...1 << 20)
        http.maxHeaderBytes = try integer(pick(raw.maxHeaderBytes, "--max-header-bytes", "TRANSFERD_MAX_HEADER_BYTES"), http.maxHeaderBytes, 1024...1 << 24)
        http.maxBodyBytes = try integer(pick(raw.maxBodyBytes, "--max-body-bytes", "TRANSFERD_MAX_BODY_BYTES"), http.maxBodyBytes, 1024...1 << 30)
        http.headerTimeout = try seconds(pick(raw.headerTimeout, "--header-timeout", "TRANSFERD_HEADER_TIMEOUT"), http.headerTimeout)
        http.bodyTimeout = try seconds(pick(raw.bodyTimeout, "--body-timeout", "TRANSFERD_BODY_TIMEOUT"), http.bodyTimeout)
        http.idleTimeout = try seconds(pick(raw.idleTimeout, "--idle-timeout", "TRANSFERD_IDLE_TIMEOUT"), http.idleTimeout)
        http.maxRequestsPerConnection = try integer(pick(raw.maxRequestsPerConnection, "--max-requests-per-connection", "TRANSFERD_MAX_REQUESTS_PER_CONNECTION"), http.maxRequestsPerConnection, 1...10_000_000)
        http.threads = try integer(pick(raw.httpThreads, "--http-threads", "TRANSFERD_HTTP_THREADS"), 0, 0...256)

        let maxDataBody = try integer(pick(raw.maxDataBodyBytes, "--max-data-body-bytes", "TRANSFERD_MAX_DATA_BODY_BYTES"),
                                      64 << 20, 1...(1 << 40))
        var configuration = ServiceConfiguration(
            listen: listen,
            dataDirectory: pick(raw.dataDir, "--data-dir", "TRANSFERD_DATA_DIR")?.value ?? "./transferd-data",
            apiTokens: tokens, allowedPaths: allowed, networkPolicy: policy.value, retention: retention,
            logLevel: level, http: http)
        configuration.maxDataBodyBytes = Int64(maxDataBody)
        if let database = pick(raw.database, "--database", "TRANSFERD_DATABASE") {
            // The URL may carry a password: the message quotes it without.
            if let problem = PostgresConnection.problem(withURL: database.value) {
                throw ConfigurationError("invalid \(database.name) '\(PostgresConnection.redacted(database.value))': \(problem)")
            }
            configuration.database = database.value
        }
        configuration.cluster = try cluster(raw, pick, listen: listen, clustered: configuration.database != nil)
        configuration.authFile = authFile
        if let digests = pick(raw.defaultDigests, "--default-digests", "TRANSFERD_DEFAULT_DIGESTS") {
            let names = digests.value.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingCharacters() }
            let list = names == [""] || names == ["none"] ? [] : names
            do {
                configuration.defaultDigests = try DigestAlgorithm.parseList(list, field: digests.name)
            } catch {
                throw ConfigurationError("invalid \(digests.name) '\(digests.value)': \(error.detail)")
            }
        }
        if let schedule = pick(raw.webhookRetrySchedule, "--webhook-retry-schedule", "TRANSFERD_WEBHOOK_RETRY_SCHEDULE") {
            let delays = schedule.value.split(separator: ",").map { parseDuration(String($0).trimmingCharacters()) }
            guard !delays.isEmpty, delays.count <= 100, delays.allSatisfy({ $0 != nil }) else {
                throw ConfigurationError("invalid \(schedule.name) '\(schedule.value)': expected delays such as 0,5s,5m,30m")
            }
            configuration.webhookSchedule = delays.map { $0! }
        }
        configuration.sseHeartbeat = try seconds(pick(raw.sseHeartbeat, "--sse-heartbeat", "TRANSFERD_SSE_HEARTBEAT"), 15)
        configuration.sweepInterval = try seconds(pick(raw.sweepInterval, "--sweep-interval", "TRANSFERD_SWEEP_INTERVAL"), 600)
        configuration.maxBlobBytes = Int64(try integer(pick(raw.maxBlobBytes, "--max-blob-bytes", "TRANSFERD_MAX_BLOB_BYTES"),
                                                       64 << 30, 1...(1 << 50)))
        if let rate = pick(raw.maxBytesPerSecond, "--max-bytes-per-second", "TRANSFERD_MAX_BYTES_PER_SECOND") {
            configuration.maxBytesPerSecond = Int64(try integer(rate, 0, 1024...(1 << 50)))
        }
        configuration.maxRunningTransfers = try integer(pick(raw.maxRunningTransfers, "--max-running-transfers", "TRANSFERD_MAX_RUNNING_TRANSFERS"),
                                                        configuration.maxRunningTransfers, 1...1_000_000)
        if let direct = pick(raw.directWrites, "--direct-writes", "TRANSFERD_DIRECT_WRITES") {
            guard direct.value == "on" || direct.value == "off" else {
                throw ConfigurationError("invalid \(direct.name) '\(direct.value)': expected on or off")
            }
            configuration.directWrites = direct.value == "on"
        }
        // `--shutdown-grace` may be 0 (no grace); `--shutdown-timeout` counts from the signal, so
        // it must leave room after the grace.
        if let grace = pick(raw.shutdownGrace, "--shutdown-grace", "TRANSFERD_SHUTDOWN_GRACE") {
            guard let value = parseDuration(grace.value), value <= 3600 else {
                throw ConfigurationError("invalid \(grace.name) '\(grace.value)': expected a duration such as 5s (0 for none)")
            }
            configuration.shutdownGrace = value
        }
        configuration.shutdownTimeout = try seconds(pick(raw.shutdownTimeout, "--shutdown-timeout", "TRANSFERD_SHUTDOWN_TIMEOUT"),
                                                    configuration.shutdownTimeout)
        guard configuration.shutdownGrace < configuration.shutdownTimeout else {
            throw ConfigurationError("--shutdown-grace (\(configuration.shutdownGrace)s) must be shorter than --shutdown-timeout "
                                     + "(\(configuration.shutdownTimeout)s), which counts from the signal")
        }
        return configuration
    }

    /// `7d`, `12h`, `30m`, `45s`, `250ms` or a bare number of seconds.
    public static func parseDuration(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            if suffix == "s" && number.hasSuffix("m") { continue }
            guard let value = Double(number), value.isFinite, value >= 0 else { return nil }
            return value * scale
        }
        guard let value = Double(text), value.isFinite, value >= 0 else { return nil }
        return value
    }

    private static func splitList(_ text: String) -> [String] {
        text.split(separator: ",").map { String($0).trimmingCharacters() }.filter { !$0.isEmpty }
    }

    private static func isUsableToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != 0x2C }
    }

    /// Tokens from `--api-token` (or `TRANSFERD_API_TOKEN`) and the token file. A source given
    /// explicitly but holding no token is an error: it would otherwise turn authentication off.
    private static func resolveTokens(_ raw: RawSettings, _ file: Setting?, _ environment: [String: String]) throws(ConfigurationError) -> [String] {
        var tokens: [String] = []
        if !raw.apiTokens.isEmpty {
            tokens = raw.apiTokens.flatMap(splitList)
            guard !tokens.isEmpty else { throw ConfigurationError("--api-token was given without a token") }
        } else if let env = environment["TRANSFERD_API_TOKEN"] {
            tokens = splitList(env)
            guard !tokens.isEmpty else { throw ConfigurationError("TRANSFERD_API_TOKEN is set but holds no token") }
        }
        if let file {
            guard let text = readSmallFile(file.value) else {
                throw ConfigurationError("cannot read \(file.name) '\(file.value)': \(errnoDescription())")
            }
            // isNewline: CRLF is one Character in Swift, so a Windows-edited file splits right too.
            let fromFile = text.split(whereSeparator: \.isNewline)
                .map { String($0).trimmingCharacters() }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            guard !fromFile.isEmpty else { throw ConfigurationError("\(file.name) '\(file.value)' holds no token") }
            tokens += fromFile
        }
        for token in tokens where !isUsableToken(token) {
            throw ConfigurationError("invalid API token: tokens must be printable ASCII without spaces or commas")
        }
        return tokens
    }

    private static func checkNetworkPolicy(_ policy: Setting) throws(ConfigurationError) {
        // The engine interprets the policy; here only its form is checked so a typo fails at start.
        if ["default", "public-only"].contains(policy.value) { return }
        for clause in policy.value.split(separator: ";") {
            let parts = clause.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, ["allow", "deny"].contains(parts[0].trimmingCharacters()) else {
                throw ConfigurationError("invalid \(policy.name) '\(policy.value)': expected default, public-only, or allow=CIDR,…;deny=CIDR,…")
            }
        }
    }

    /// `--advertise-address` and `--lease-timeout`: cluster mode's, refused without `--database`.
    private static func cluster(_ raw: RawSettings, _ pick: (String?, String, String) -> Setting?, listen: SocketAddress,
                                clustered: Bool) throws(ConfigurationError) -> ClusterSettings?
    {
        let address = pick(raw.advertiseAddress, "--advertise-address", "TRANSFERD_ADVERTISE_ADDRESS")
        let timeout = pick(raw.leaseTimeout, "--lease-timeout", "TRANSFERD_LEASE_TIMEOUT")
        guard clustered else {
            if let given = address ?? timeout {
                throw ConfigurationError("\(given.name) applies to cluster mode only: give --database postgres://… too")
            }
            return nil
        }
        if let address, let problem = ClusterSettings.problem(withAddress: address.value) {
            throw ConfigurationError("invalid \(address.name) '\(address.value)': \(problem)")
        }
        guard let advertised = ClusterSettings.advertised(address?.value, listen: listen) else {
            throw ConfigurationError("cluster mode needs --advertise-address (or TRANSFERD_ADVERTISE_ADDRESS) when listening on \(listen): where the other replicas reach this one, e.g. 10.0.0.7:8080")
        }
        var settings = ClusterSettings(advertiseAddress: advertised)
        settings.leaseTimeout = try seconds(timeout, settings.leaseTimeout)
        if let timeout, !(2...3600).contains(settings.leaseTimeout) {
            throw ConfigurationError("invalid \(timeout.name) '\(timeout.value)': expected a duration from 2s to 1h")
        }
        return settings
    }

    private static func integer(_ setting: Setting?, _ fallback: Int, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let setting else { return fallback }
        guard let value = Int(setting.value), range.contains(value) else {
            throw ConfigurationError("invalid \(setting.name) '\(setting.value)': expected a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    private static func seconds(_ setting: Setting?, _ fallback: Double) throws(ConfigurationError) -> Double {
        guard let setting else { return fallback }
        guard let value = parseDuration(setting.value), value > 0 else {
            throw ConfigurationError("invalid \(setting.name) '\(setting.value)': expected a positive duration such as 10s or 500ms")
        }
        return value
    }
}

func readSmallFile(_ path: String) -> String? {
    guard let f = fopen(path, "r") else { return nil }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&buffer, 1, buffer.count, f)
        if n <= 0 { break }
        bytes += buffer[0..<n]
        if bytes.count > 1 << 20 { return nil }
    }
    return String(decoding: bytes, as: UTF8.self)
}


