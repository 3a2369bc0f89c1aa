/// Limits and timeouts of the HTTP server, with defaults in the spirit of nginx's.
public struct HTTPServerConfiguration: Sendable {
    public var address: SocketAddress
    /// Event-loop threads serving connections; one per core by default.
    public var loopCount: Int
    /// Longest request line (414 beyond).
    public var maxRequestLineBytes = 8 * 1024
    /// Largest header section (431 beyond).
    public var maxHeaderBytes = 32 * 1024
    /// Most header fields in a request (431 beyond).
    public var maxHeaderFields = 100
    /// Largest body a buffered route (a JSON API call) accepts (413 beyond). Streamed routes set
    /// their own limits.
    public var maxBufferedBodyBytes = 1024 * 1024
    /// A request head must arrive in full within this many seconds of its first byte.
    public var headerTimeout: Double = 10
    /// Longest silence between two reads of a request body.
    public var bodyTimeout: Double = 60
    /// A body must also keep up a minimum rate, so that one trickled a byte at a time just inside
    /// `bodyTimeout` cannot hold its connection for hours: it must be complete within
    /// `bodyRateGrace` seconds of its start plus one second per `minBodyRate` bytes received (the
    /// scheme of Apache's mod_reqtimeout, `body=30,MinRate=1024`). 408 otherwise.
    public var minBodyRate = 1024
    public var bodyRateGrace: Double = 30
    /// How long a keep-alive connection may wait for its next request.
    public var idleTimeout: Double = 75
    /// Longest time a response may make no progress because the client does not read.
    public var writeTimeout: Double = 60
    public var maxRequestsPerConnection = 1000
    /// A request whose buffered body is at least this large is handled on a pool thread, not on
    /// its connection's loop: parsing and validating a 1 MiB body takes milliseconds, and every
    /// other connection of that loop would wait for it. Smaller bodies (almost every API call)
    /// are handled inline, where the hop would cost more than it saves.
    public var offloadBodyBytes = 64 * 1024
    public var maxConnections = 10_000
    /// How long shutdown waits for in-flight responses before closing what is left.
    public var shutdownGrace: Double = 10

    public init(address: SocketAddress, loopCount: Int) {
        self.address = address
        self.loopCount = loopCount
    }
}
