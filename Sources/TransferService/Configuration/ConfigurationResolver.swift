import Glibc
import HTTPServer
import Reactor

/// A setting as given on the command line; nil when the flag was absent.
public struct RawSettings: Sendable {
    public var listen: String?
    public var dataDir: String?
    public var apiTokens: [String] = []
    public var apiTokenFile: String?
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

    public init() {}
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
        func pick(_ flag: String?, _ variable: String) -> String? {
            if let flag { return flag }
            if let value = environment[variable], !value.isEmpty { return value }
            return nil
        }

        let listenText = pick(raw.listen, "TRANSFERD_LISTEN") ?? "127.0.0.1:8080"
        guard let listen = SocketAddress(listenText) else {
            throw ConfigurationError("invalid --listen '\(listenText)': expected IPv4:port or [IPv6]:port, e.g. 127.0.0.1:8080")
        }

        var tokens = raw.apiTokens.flatMap(splitList)
        if tokens.isEmpty, let env = environment["TRANSFERD_API_TOKEN"] { tokens = splitList(env) }
        if let file = pick(raw.apiTokenFile, "TRANSFERD_API_TOKEN_FILE") { tokens += try readTokenFile(file) }
        for token in tokens where !isUsableToken(token) {
            throw ConfigurationError("invalid API token: tokens must be printable ASCII without spaces or commas")
        }
        if tokens.isEmpty && !listen.isLoopback {
            throw ConfigurationError(
                "refusing to listen on \(listen) without an API token: set --api-token, TRANSFERD_API_TOKEN or --api-token-file, or listen on a loopback address")
        }

        var allowed = raw.allowPaths.flatMap(splitList)
        if allowed.isEmpty, let env = environment["TRANSFERD_ALLOW_PATHS"] { allowed = splitList(env) }
        for path in allowed where !path.hasPrefix("/") {
            throw ConfigurationError("invalid --allow-path '\(path)': must be an absolute path")
        }

        let policy = pick(raw.networkPolicy, "TRANSFERD_NETWORK_POLICY") ?? "default"
        try checkNetworkPolicy(policy)

        let retentionText = pick(raw.retention, "TRANSFERD_RETENTION") ?? "7d"
        guard let retention = parseDuration(retentionText), retention > 0 else {
            throw ConfigurationError("invalid --retention '\(retentionText)': expected a duration such as 7d, 12h, 30m or 3600s")
        }

        let level = (pick(raw.logLevel, "TRANSFERD_LOG_LEVEL") ?? "info").lowercased()
        guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(level) else {
            throw ConfigurationError("invalid --log-level '\(level)': expected trace, debug, info, notice, warning, error or critical")
        }

        var http = ServiceConfiguration.HTTPLimits()
        http.maxConnections = try integer(pick(raw.maxConnections, "TRANSFERD_MAX_CONNECTIONS"), "--max-connections", http.maxConnections, 1...1_000_000)
        http.maxRequestLineBytes = try integer(pick(raw.maxRequestLine, "TRANSFERD_MAX_REQUEST_LINE"), "--max-request-line", http.maxRequestLineBytes, 256...1 << 20)
        http.maxHeaderBytes = try integer(pick(raw.maxHeaderBytes, "TRANSFERD_MAX_HEADER_BYTES"), "--max-header-bytes", http.maxHeaderBytes, 1024...1 << 24)
        http.maxBodyBytes = try integer(pick(raw.maxBodyBytes, "TRANSFERD_MAX_BODY_BYTES"), "--max-body-bytes", http.maxBodyBytes, 1024...1 << 30)
        http.headerTimeout = try seconds(pick(raw.headerTimeout, "TRANSFERD_HEADER_TIMEOUT"), "--header-timeout", http.headerTimeout)
        http.bodyTimeout = try seconds(pick(raw.bodyTimeout, "TRANSFERD_BODY_TIMEOUT"), "--body-timeout", http.bodyTimeout)
        http.idleTimeout = try seconds(pick(raw.idleTimeout, "TRANSFERD_IDLE_TIMEOUT"), "--idle-timeout", http.idleTimeout)
        http.maxRequestsPerConnection = try integer(pick(raw.maxRequestsPerConnection, "TRANSFERD_MAX_REQUESTS_PER_CONNECTION"), "--max-requests-per-connection", http.maxRequestsPerConnection, 1...10_000_000)
        http.threads = try integer(pick(raw.httpThreads, "TRANSFERD_HTTP_THREADS"), "--http-threads", 0, 0...256)

        return ServiceConfiguration(
            listen: listen,
            dataDirectory: pick(raw.dataDir, "TRANSFERD_DATA_DIR") ?? "./transferd-data",
            apiTokens: tokens, allowedPaths: allowed, networkPolicy: policy, retention: retention,
            logLevel: level, http: http)
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

    private static func readTokenFile(_ path: String) throws(ConfigurationError) -> [String] {
        guard let text = readSmallFile(path) else {
            throw ConfigurationError("cannot read --api-token-file '\(path)': \(errnoDescription())")
        }
        return text.split(whereSeparator: { $0 == "\n" || $0 == "\r" })
            .map { String($0).trimmingCharacters() }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    private static func checkNetworkPolicy(_ policy: String) throws(ConfigurationError) {
        // The engine interprets the policy; here only its form is checked so a typo fails at start.
        let forms = ["default", "public-only"]
        if forms.contains(policy) { return }
        for clause in policy.split(separator: ";") {
            let parts = clause.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, ["allow", "deny"].contains(parts[0].trimmingCharacters()) else {
                throw ConfigurationError("invalid --network-policy '\(policy)': expected default, public-only, or allow=CIDR,…;deny=CIDR,…")
            }
        }
    }

    private static func integer(_ text: String?, _ flag: String, _ fallback: Int, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let text else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError("invalid \(flag) '\(text)': expected a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    private static func seconds(_ text: String?, _ flag: String, _ fallback: Double) throws(ConfigurationError) -> Double {
        guard let text else { return fallback }
        guard let value = parseDuration(text), value > 0 else {
            throw ConfigurationError("invalid \(flag) '\(text)': expected a positive duration such as 10s or 500ms")
        }
        return value
    }
}

extension StringProtocol {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
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


