import HTTPServer

/// A session's `configuration` (PRODUCT.md), validated, with defaults filled in.
struct SessionConfiguration: Sendable, Equatable {
    struct Cookies: Sendable, Equatable {
        enum Accept: String, Sendable { case always, never, sameDomain = "same_domain" }
        var accept: Accept = .always
        var send = true
    }

    /// Credentials for a host (optionally one port and a path prefix). The secret (password or
    /// token) is never echoed, logged, or written anywhere for an ephemeral session.
    struct Credential: Sendable, Equatable {
        enum Scheme: String, Sendable { case basic, digest, bearer }
        var host: String
        var port: Int?
        var pathPrefix: String?
        var scheme: Scheme
        var username: String?
        var secret: String
    }

    struct Redirects: Sendable, Equatable {
        var follow = true
        var max = 16
    }

    struct Retry: Sendable, Equatable {
        var maxAttempts = 5
        var backoffInitial: Double = 1
        var backoffMax: Double = 300
        var onHTTPStatus: [Int] = []
    }

    struct Proxy: Sendable, Equatable {
        var url: String
        var noProxy: String?
    }

    /// Paths under an `--allow-path` root, read when the session is configured (and at start).
    struct TLS: Sendable, Equatable {
        var caFile: String?
        var clientCertFile: String?
        var clientKeyFile: String?
        var pinnedPublicKey: String?
    }

    var headers: [Header] = []
    var timeoutRequest: Double = 60
    var timeoutResource: Double = 604_800
    var maxConnectionsPerHost = 6
    var maxConcurrentTasks = 64
    var waitsForConnectivity: Bool?
    var discretionary = false
    var cookies = Cookies()
    var credentials: [Credential] = []
    var redirects = Redirects()
    var retry = Retry()
    var maxBytesPerSecond: Int64?
    var proxy: Proxy?
    var tls: TLS?

    /// `waits_for_connectivity` defaults to true for background sessions only.
    func waitsForConnectivity(mode: SessionMode) -> Bool { waitsForConnectivity ?? (mode == .background) }
}

/// A request header field, checked so it cannot smuggle a second header or request.
struct Header: Sendable, Equatable {
    let name: String
    let value: String
}
