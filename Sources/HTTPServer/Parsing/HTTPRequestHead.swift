/// How the body of a request is delimited (RFC 9112 §6).
public enum BodyFraming: Sendable, Equatable {
    case length(Int)
    case chunked

    public var isEmpty: Bool { self == .length(0) }
}

/// The parsed request line and header section of one request.
public struct HTTPRequestHead: Sendable {
    public var method: String
    /// The request-target as received.
    public var target: String
    /// The path part of the target, still percent-encoded.
    public var path: Substring
    /// The query part after `?`, without it; nil when absent.
    public var query: Substring?
    public var versionMinor: Int
    public var headers: HTTPHeaders
    /// Whether the connection may carry another request after this one (RFC 9112 §9.3).
    public var keepAlive: Bool
    public var framing: BodyFraming
    /// `Expect: 100-continue` was sent (RFC 9110 §10.1.1).
    public var expectsContinue: Bool

    public var isHead: Bool { method == "HEAD" }
}
