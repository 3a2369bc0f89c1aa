/// Runs with the request once its head is parsed, before any body is read: a denial (say, 401) is
/// sent at once, so a client is not made to upload a body that would be refused.
public typealias RequestGuard = @Sendable (HTTPRequest) -> HTTPResponse?

/// Handles a request whose body (if any) was collected, up to the server's buffered-body limit.
public typealias RequestHandler = @Sendable (HTTPRequest, Responder) -> Void

/// Creates the sink that consumes a streamed body as it arrives.
public typealias BodySinkFactory = @Sendable (HTTPRequest) throws(HTTPProblem) -> RequestBodySink

public enum RouteAction: Sendable {
    case buffered(RequestHandler)
    case streamed(BodySinkFactory)
}

/// Consumes a request body piece by piece on the connection's loop thread, then answers.
/// Calls must return quickly: they run between other connections' events.
public protocol RequestBodySink: AnyObject {
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPProblem)
    /// The body is complete; answer through `responder` (now or later, from any thread).
    func finish(_ responder: Responder)
    /// The body will not complete (client gone, malformed framing, timeout, or a `write` threw).
    func abort()
}

/// Maps method and path to a route. Patterns are literal segments and `{name}` parameters;
/// a literal segment wins over a parameter at the same place.
public final class Router: Sendable {
    /// A class, so matching passes one reference around instead of copying arrays and closures.
    public final class Route: Sendable {
        public let method: String
        public let pattern: String
        let segments: [Segment]
        let action: RouteAction
        let guardCheck: RequestGuard?
        let index: Int

        init(method: String, pattern: String, segments: [Segment], action: RouteAction, guardCheck: RequestGuard?, index: Int) {
            self.method = method
            self.pattern = pattern
            self.segments = segments
            self.action = action
            self.guardCheck = guardCheck
            self.index = index
        }
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    public enum Match {
        case found(Route, PathParameters)
        case notFound
        case methodNotAllowed(allowed: [String])
    }

    private let routes: [Route]
    private let prefixGuards: [(prefix: String, check: RequestGuard)]

    public init(_ build: (inout RouteTable) -> Void) {
        var table = RouteTable()
        build(&table)
        routes = table.routes
        prefixGuards = table.prefixGuards
    }

    /// The guard for a path no route matches, so that (say) an unknown `/v1/…` path answers 401
    /// to a client without a token rather than revealing, by a 404, which paths exist.
    public func unmatchedGuard(for path: Substring) -> RequestGuard? {
        prefixGuards.first { path == $0.prefix || path.hasPrefix($0.prefix + "/") }?.check
    }

    public var patterns: [String] { routes.map(\.pattern) }

    public func match(method: String, path: Substring) -> Match {
        var segments: [Substring] = path.split(separator: "/", omittingEmptySubsequences: false)
        if segments.first == "" { segments.removeFirst() }
        var best: (Route, PathParameters, literals: Int)?
        var allowed: [String] = []
        for route in routes where route.segments.count == segments.count {
            guard let (params, literals) = bind(route.segments, segments) else { continue }
            let methodMatches = route.method == method || (method == "HEAD" && route.method == "GET")
            if !methodMatches {
                allowed.append(route.method)
                continue
            }
            if best == nil || literals > best!.literals { best = (route, params, literals) }
        }
        if let best { return .found(best.0, best.1) }
        if allowed.isEmpty { return .notFound }
        if allowed.contains("GET") { allowed.append("HEAD") }
        return .methodNotAllowed(allowed: Array(Set(allowed)).sorted())
    }

    private func bind(_ pattern: [Segment], _ path: [Substring]) -> (PathParameters, Int)? {
        var params = PathParameters()
        var literals = 0
        for (segment, value) in zip(pattern, path) {
            switch segment {
            case .literal(let text):
                guard value == text else { return nil }
                literals += 1
            case .parameter(let name):
                guard !value.isEmpty, let decoded = PercentDecoding.decode(value) else { return nil }
                params.pairs.append((name, decoded))
            }
        }
        return (params, literals)
    }
}

/// Collects routes while a `Router` is built.
public struct RouteTable {
    fileprivate(set) var routes: [Router.Route] = []
    fileprivate(set) var prefixGuards: [(prefix: String, check: RequestGuard)] = []

    /// Applies `check` to requests under `prefix` that match no route (before the 404 or 405).
    public mutating func guardUnmatched(prefix: String, _ check: @escaping RequestGuard) {
        prefixGuards.append((prefix, check))
    }

    public mutating func add(_ method: String, _ pattern: String, guard guardCheck: RequestGuard? = nil,
                             _ action: RouteAction)
    {
        let segments: [Router.Segment] = pattern.split(separator: "/").map { part in
            if part.hasPrefix("{") && part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(String(part))
        }
        routes.append(Router.Route(method: method, pattern: pattern, segments: segments, action: action,
                                   guardCheck: guardCheck, index: routes.count))
    }

    public mutating func add(_ method: String, _ pattern: String, guard guardCheck: RequestGuard? = nil,
                             _ handler: @escaping RequestHandler)
    {
        add(method, pattern, guard: guardCheck, .buffered(handler))
    }
}
