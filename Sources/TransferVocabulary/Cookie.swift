/// One cookie as RFC 6265 §5.3 stores it.
public struct Cookie: Sendable, Equatable {
    public var name: String
    public var value: String
    /// Lower-case, without a leading dot.
    public var domain: String
    /// Sent only to exactly `domain`, not its subdomains (the Set-Cookie had no Domain).
    public var hostOnly: Bool
    public var path: String
    public var secure: Bool
    public var httpOnly: Bool
    /// Unix seconds; nil for a cookie without Expires or Max-Age, which lasts as long as its
    /// transferd session (across restarts, for a durable one).
    public var expires: Int64?

    public init(name: String, value: String, domain: String, hostOnly: Bool, path: String, secure: Bool,
                httpOnly: Bool, expires: Int64?)
    {
        self.name = name
        self.value = value
        self.domain = domain
        self.hostOnly = hostOnly
        self.path = path
        self.secure = secure
        self.httpOnly = httpOnly
        self.expires = expires
    }
}

/// Whose cookies a session keeps, and whether it sends them (the session's `cookies`; URLSession's
/// `httpCookieAcceptPolicy` and `httpShouldSetCookies`).
public struct CookiePolicy: Sendable, Equatable {
    public enum Accept: String, Sendable, Equatable { case always, never, sameDomain = "same_domain" }
    public var accept: Accept
    public var send: Bool

    public init(accept: Accept = .always, send: Bool = true) {
        self.accept = accept
        self.send = send
    }
}
