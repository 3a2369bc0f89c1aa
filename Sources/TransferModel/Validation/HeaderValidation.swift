import JSON

/// Request headers from clients, checked before they reach curl: a field name must be a token and
/// a value must not hold CR, LF or NUL, or a client could inject a header (or a whole request).
enum HeaderValidation {
    /// Headers curl or transferd sets from other fields; a client supplying them would make the
    /// request's framing ambiguous.
    static let reserved: Set<String> = ["host", "content-length", "transfer-encoding", "connection", "te", "upgrade",
                                        "trailer", "keep-alive", "proxy-connection", "expect"]

    /// `field` names the headers in a complaint; it is only built for one (bulk creation checks
    /// thousands of tasks, nearly all fine).
    static func validate(_ pairs: [(String, String)], field: @autoclosure () -> String) throws(Refusal) -> [Header] {
        guard pairs.count <= 128 else { throw Refusal.invalid(field(), "has more than 128 headers") }
        var result: [Header] = []
        for (name, value) in pairs {
            func f() -> String { "\(field()).\(name)" }
            guard !name.isEmpty, name.utf8.count <= 256, name.utf8.allSatisfy(isTokenChar) else {
                throw Refusal.invalid(f(), "is not a valid header name")
            }
            guard value.utf8.count <= 8192, !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) else {
                throw Refusal.invalid(f(), "must not contain CR, LF or NUL")
            }
            guard !reserved.contains(name.lowercased()) else {
                throw Refusal.invalid(f(), "is set by transferd and cannot be given")
            }
            result.append(Header(name: name, value: value))
        }
        return result
    }

    /// A list of header names (`configuration.sensitive_headers`), lowercased: each a token.
    static func names(_ items: [JSONValue], field: String) throws(Refusal) -> [String] {
        try items.enumerated().map { (i, item) throws(Refusal) in
            guard let name = item.stringValue, !name.isEmpty, name.utf8.count <= 256, name.utf8.allSatisfy(isTokenChar) else {
                throw Refusal.invalid("\(field)[\(i)]", "must be a header name")
            }
            return name.lowercased()
        }
    }

    static func isTokenChar(_ c: UInt8) -> Bool {
        switch c {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: true
        default: false
        }
    }
}

/// Identifiers of sessions and tasks: 1–200 characters of `[A-Za-z0-9._-]`, never `.` or `..`
/// (they also name directories on disk).
package enum IdentifierValidation {
    package static func isValid(_ s: String) -> Bool {
        guard !s.isEmpty, s.utf8.count <= 200, s != ".", s != ".." else { return false }
        return s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F || c == 0x2D
        }
    }
}
