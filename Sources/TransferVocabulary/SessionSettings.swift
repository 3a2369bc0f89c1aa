/// What the engine applies to every transfer of a session (a URLSessionConfiguration, as far as the
/// engine is concerned), made from the session's configuration: admission limits, bandwidth,
/// whether its work is discretionary, cookies, credentials, TLS and proxy.
public struct SessionSettings: Sendable, Equatable {
    public var maxConcurrentTasks = 64
    public var maxConnectionsPerHost = 6
    /// Shared by the session's running transfers, not per transfer; body bytes in both directions.
    public var maxBytesPerSecond: Int64?
    /// Starts only when no transfer of a non-discretionary session waits, on any loop.
    public var discretionary = false
    public var cookies = CookiePolicy()
    public var credentials: [Credential] = []
    public var tls = TLSSettings()
    public var proxy: ProxySettings?

    public init() {}
}

/// Credentials for one host (and optionally one port and path prefix). They are chosen by the
/// task's URL and sent only there: curl withholds them after a redirect to another host, port or
/// scheme (`CURLOPT_UNRESTRICTED_AUTH` stays off).
public struct Credential: Sendable, Equatable {
    public enum Scheme: String, Sendable, Equatable { case basic, digest, bearer }
    /// Lower-case host name or address, as `URLParts.host` spells it.
    public var host: String
    public var port: Int?
    public var pathPrefix: String?
    public var scheme: Scheme
    /// None for a bearer token.
    public var username: String?
    /// The password, or the bearer token. Never echoed, logged, or written anywhere for an
    /// ephemeral session.
    public var secret: String

    public init(host: String, port: Int?, pathPrefix: String?, scheme: Scheme, username: String?, secret: String) {
        self.host = host
        self.port = port
        self.pathPrefix = pathPrefix
        self.scheme = scheme
        self.username = username
        self.secret = secret
    }
}

/// TLS material of a session, read from its files when the session is configured (so the engine
/// never opens a path itself). Certificate verification is always on.
public struct TLSSettings: Sendable, Equatable {
    /// PEM certificates that replace the system's trust store.
    public var caCertificates: [UInt8]?
    /// PEM client certificate (chain) and its private key.
    public var clientCertificate: [UInt8]?
    public var clientKey: [UInt8]?
    /// `sha256//<base64>` (several joined by `;`): the server's public key must be one of these.
    public var pinnedPublicKey: String?
    /// The files could not be read (at start, after they were valid when configured): every
    /// transfer of the session fails with this instead of running with weaker settings.
    public var unavailable: TransferFailure?

    public init() {}
}

/// The proxy a session's transfers go through. The network policy still applies to the address
/// actually connected to, which is then the proxy's.
public struct ProxySettings: Sendable, Equatable {
    /// `http://`, `https://`, `socks5://` or `socks5h://`, possibly with credentials.
    public var url: String
    /// curl's `NO_PROXY` list: host names, domains or addresses reached directly, `*` for all.
    public var noProxy: String?

    public init(url: String, noProxy: String?) {
        self.url = url
        self.noProxy = noProxy
    }
}
