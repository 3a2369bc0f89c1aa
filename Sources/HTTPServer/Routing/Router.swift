/// Runs with the request once its head is parsed, before any body is read: a denial (say, 401) is
/// sent at once, so a client is not made to upload a body that would be refused.
public typealias RequestGuard = @Sendable (HTTPRequest) -> Admission

/// What a guard decided about a request: whether it goes on to its handler, who it is from, and
/// what every response to it carries.
public struct Admission: Sendable {
    /// Answered at once instead of running the handler.
    public var denial: HTTPResponse?
    /// Who sent the request, as the guard established it: handed to the handler in
    /// `HTTPRequest.identity` (the server does not look inside).
    public var identity: (any AnyObject & Sendable)?
    /// Added to the response, whoever produces it (the denial, the handler, a 500 for a handler
    /// that never answered).
    public var responseHeaders: HTTPHeaders
    /// Runs with the status, and the `Location` of what the response created if any, once the
    /// response was sent (or the connection gave up on it).
    public var completion: (@Sendable (_ status: Int, _ location: String?) -> Void)?

    public init(denial: HTTPResponse? = nil, identity: (any AnyObject & Sendable)? = nil,
                responseHeaders: HTTPHeaders = HTTPHeaders(), completion: (@Sendable (_ status: Int, _ location: String?) -> Void)? = nil)
    {
        self.denial = denial
        self.identity = identity
        self.responseHeaders = responseHeaders
        self.completion = completion
    }

    public static let admitted = Admission()

    public static func denied(_ response: HTTPResponse) -> Admission { Admission(denial: response) }
}

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
///
/// Matching works on the path's bytes: routes are grouped by their number of segments, literal
/// segments compared byte for byte, and parameters made into strings only for the route chosen.
/// Splitting the path into `Substring`s and decoding every candidate's parameters made routing
/// the most expensive step of a small request.
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

        /// How many literal segments matched, or nil when the path is not this route's. A
        /// parameter must be non-empty and correctly percent-encoded.
        func literalsMatched(_ path: UnsafeRawBufferPointer, _ ranges: [Range<Int>]) -> Int? {
            var literals = 0
            for (segment, range) in zip(segments, ranges) {
                switch segment {
                case .literal(let text):
                    guard text.count == range.count else { return nil }
                    for i in 0..<text.count where text[i] != path[range.lowerBound + i] { return nil }
                    literals += 1
                case .parameter:
                    guard !range.isEmpty else { return nil }
                    if range.contains(where: { path[$0] == 0x25 }),
                       PercentDecoding.decode(UnsafeRawBufferPointer(rebasing: path[range])) == nil { return nil }
                }
            }
            return literals
        }
    }

    enum Segment: Sendable, Equatable {
        case literal([UInt8])
        case parameter(String)
    }

    public enum Match {
        case found(Route, PathParameters)
        case notFound
        case methodNotAllowed(allowed: [String])
    }

    private let routes: [Route]
    /// `routes` by their number of segments, each list in the order the routes were added.
    private let routesBySegmentCount: [[Route]]
    private let prefixGuards: [(prefix: String, check: RequestGuard)]

    public init(_ build: (inout RouteTable) -> Void) {
        var table = RouteTable()
        build(&table)
        routes = table.routes
        var grouped = [[Route]](repeating: [], count: (routes.map(\.segments.count).max() ?? 0) + 1)
        for route in routes { grouped[route.segments.count].append(route) }
        routesBySegmentCount = grouped
        prefixGuards = table.prefixGuards
    }

    /// The guard for a path no route matches, so that (say) an unknown `/v1/…` path answers 401
    /// to a client without a token rather than revealing, by a 404, which paths exist.
    public func unmatchedGuard(for path: Substring) -> RequestGuard? {
        prefixGuards.first { path == $0.prefix || path.hasPrefix($0.prefix + "/") }?.check
    }

    public var patterns: [String] { routes.map(\.pattern) }

    public func match(method: String, path: Substring) -> Match {
        if let match = path.utf8.withContiguousStorageIfAvailable({ match(method: method, path: UnsafeRawBufferPointer($0)) }) {
            return match
        }
        return Array(path.utf8).withUnsafeBytes { match(method: method, path: $0) }
    }

    private func match(method: String, path: UnsafeRawBufferPointer) -> Match {
        let ranges = Router.segmentRanges(path)
        guard ranges.count < routesBySegmentCount.count else { return .notFound }
        let candidates = routesBySegmentCount[ranges.count]
        var best: (route: Route, literals: Int)?
        for route in candidates where route.method == method || (method == "HEAD" && route.method == "GET") {
            guard let literals = route.literalsMatched(path, ranges) else { continue }
            if best == nil || literals > best!.literals { best = (route, literals) }
        }
        if let best {
            var params = PathParameters()
            for (segment, range) in zip(best.route.segments, ranges) {
                guard case .parameter(let name) = segment else { continue }
                // Checked while matching, so decoding succeeds.
                params.pairs.append((name, PercentDecoding.decode(UnsafeRawBufferPointer(rebasing: path[range])) ?? ""))
            }
            return .found(best.route, params)
        }
        var allowed = Set(candidates.filter { $0.literalsMatched(path, ranges) != nil }.map(\.method))
        if allowed.isEmpty { return .notFound }
        if allowed.contains("GET") { allowed.insert("HEAD") }
        return .methodNotAllowed(allowed: allowed.sorted())
    }

    /// The segments between slashes, without the empty one before a leading slash:
    /// `/v1/sessions/` → `v1`, `sessions`, ``.
    static func segmentRanges(_ path: UnsafeRawBufferPointer) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(8)
        var start = 0
        for i in 0..<path.count where path[i] == 0x2F {
            if i > 0 { ranges.append(start..<i) }
            start = i + 1
        }
        ranges.append(start..<path.count)
        return ranges
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
        // The parts between slashes as a path's are cut (`Router.segmentRanges`): a trailing slash
        // makes an empty last segment, so `/ui/` is a route of its own, distinct from `/ui`.
        let parts = pattern.split(separator: "/", omittingEmptySubsequences: false).dropFirst(pattern.hasPrefix("/") ? 1 : 0)
        let segments: [Router.Segment] = parts.map { part in
            if part.hasPrefix("{") && part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(Array(part.utf8))
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
