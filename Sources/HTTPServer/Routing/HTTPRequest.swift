/// A request as handlers see it: the parsed head, the matched route and its path parameters, and
/// (for buffered routes) the body.
public struct HTTPRequest: Sendable {
    public let head: HTTPRequestHead
    /// The route pattern that matched, e.g. `/v1/sessions/{identifier}`: a label for logs and metrics.
    public let route: String
    public let parameters: PathParameters
    public internal(set) var body: [UInt8]
    /// The client's `X-Request-Id` when it sent a usable one, otherwise one made up here.
    public let id: String
    public let remoteAddress: String
    /// Who sent it, as the route's guard established it (nil for a route without one).
    public internal(set) var identity: (any AnyObject & Sendable)?

    public var method: String { head.method }
    public var path: Substring { head.path }
    public var headers: HTTPHeaders { head.headers }

    /// The first value of a query parameter, percent-decoded (`+` is a space, as in forms).
    public func query(_ name: String) -> String? {
        guard let query = head.query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard PercentDecoding.decode(parts[0], plusIsSpace: true) == name else { continue }
            return parts.count > 1 ? PercentDecoding.decode(parts[1], plusIsSpace: true) ?? "" : ""
        }
        return nil
    }

    /// Every query parameter name present, for refusing unknown ones.
    public var queryNames: [String] {
        guard let query = head.query else { return [] }
        return query.split(separator: "&").compactMap {
            PercentDecoding.decode($0.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0], plusIsSpace: true)
        }
    }
}

/// Values captured by `{name}` segments of a route pattern.
public struct PathParameters: Sendable {
    var pairs: [(String, String)] = []

    public subscript(_ name: String) -> String? {
        for (key, value) in pairs where key == name { return value }
        return nil
    }
}

enum PercentDecoding {
    /// nil when an escape is malformed or the result is not UTF-8.
    static func decode<S: StringProtocol>(_ s: S, plusIsSpace: Bool = false) -> String? {
        decode(s.utf8, plusIsSpace: plusIsSpace)
    }

    /// `utf8` is text already (a path or query of a request), so without escapes it is used as it is.
    static func decode<C: Collection<UInt8>>(_ utf8: C, plusIsSpace: Bool = false) -> String? {
        guard utf8.contains(0x25) || (plusIsSpace && utf8.contains(0x2B)) else {
            return String(decoding: utf8, as: UTF8.self)
        }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count)
        var it = utf8.makeIterator()
        while let c = it.next() {
            if c == 0x25 {
                guard let h = it.next().flatMap(CharacterClass.hexValue), let l = it.next().flatMap(CharacterClass.hexValue)
                else { return nil }
                out.append(UInt8(h << 4 | l))
            } else if c == 0x2B && plusIsSpace {
                out.append(0x20)
            } else {
                out.append(c)
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}
