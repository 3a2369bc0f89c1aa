/// Limits and timeouts of the HTTP server, with defaults in the spirit of nginx's.
public struct HTTPServerConfiguration: Sendable {
    public var address: SocketAddress
    /// Event-loop threads serving connections; one per core by default.
    public var loopCount: Int
    /// Longest request line (414 beyond).
    public var maxRequestLineBytes = 8 * 1024
    /// Largest header section (431 beyond).
    public var maxHeaderBytes = 32 * 1024
    /// Largest body a buffered route (a JSON API call) accepts (413 beyond). Streamed routes set
    /// their own limits.
    public var maxBufferedBodyBytes = 1024 * 1024
    /// A request head must arrive in full within this many seconds of its first byte.
    public var headerTimeout: Double = 10
    /// Longest silence between two reads of a request body.
    public var bodyTimeout: Double = 60
    /// How long a keep-alive connection may wait for its next request.
    public var idleTimeout: Double = 75
    /// Longest time a response may make no progress because the client does not read.
    public var writeTimeout: Double = 60
    public var maxRequestsPerConnection = 1000
    public var maxConnections = 10_000
    /// How long shutdown waits for in-flight responses before closing what is left.
    public var shutdownGrace: Double = 10

    public init(address: SocketAddress, loopCount: Int) {
        self.address = address
        self.loopCount = loopCount
    }
}
