import Digests
import HTTPServer

/// Checks `Authorization: Bearer <token>` on `/v1` routes (RFC 6750).
package struct Authenticator: Sendable {
    private let tokens: [[UInt8]]

    package init(tokens: [String]) {
        self.tokens = tokens.map { Array($0.utf8) }
    }

    package var isEnabled: Bool { !tokens.isEmpty }

    /// The guard for routes that need a token: nil lets the request through.
    package func check(_ request: HTTPRequest) -> HTTPResponse? {
        guard isEnabled else { return nil }
        guard let header = request.headers["authorization"] else {
            return Authenticator.challenge("missing bearer token", error: nil)
        }
        // credentials = auth-scheme 1*SP token68 (RFC 9110 §11.4): one or more spaces. Read from
        // the header's bytes: this runs on every request.
        var value = header
        let matched: Bool? = value.withUTF8 { bytes in
            let scheme = bytes.firstIndex(of: 0x20) ?? bytes.count
            // The scheme is case-insensitive (RFC 9110 §11.1); `| 0x20` lowercases the letters of "bearer".
            guard scheme == 6, bytes.prefix(6).elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }) else { return nil }
            let presented = UnsafeBufferPointer(rebasing: bytes[scheme...].drop { $0 == 0x20 })
            guard !presented.isEmpty else { return nil }
            // Compare with every token, always, so timing reveals neither which token nor how much
            // of one matched.
            var matched = false
            for token in tokens { matched = ConstantTime.equals(token, presented) || matched }
            return matched
        }
        switch matched {
        case nil: return Authenticator.challenge("the Authorization header must use the Bearer scheme", error: "invalid_request")
        case false?: return Authenticator.challenge("invalid bearer token", error: "invalid_token")
        case true?: return nil
        }
    }

    private static func challenge(_ detail: String, error: String?) -> HTTPResponse {
        var value = "Bearer realm=\"transferd\""
        if let error { value += ", error=\"\(error)\"" }
        return .problem(HTTPProblem(401, "unauthorized", detail), headers: HTTPHeaders([("WWW-Authenticate", value)]))
    }
}
