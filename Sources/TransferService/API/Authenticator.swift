import HTTPServer

/// Checks `Authorization: Bearer <token>` on `/v1` routes (RFC 6750).
struct Authenticator: Sendable {
    private let tokens: [[UInt8]]

    init(tokens: [String]) {
        self.tokens = tokens.map { Array($0.utf8) }
    }

    var isEnabled: Bool { !tokens.isEmpty }

    /// The guard for routes that need a token: nil lets the request through.
    func check(_ request: HTTPRequest) -> HTTPResponse? {
        guard isEnabled else { return nil }
        guard let header = request.headers["authorization"] else {
            return Authenticator.challenge("missing bearer token", error: nil)
        }
        // credentials = auth-scheme 1*SP token68 (RFC 9110 §11.4): one or more spaces.
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return Authenticator.challenge("the Authorization header must use the Bearer scheme", error: "invalid_request")
        }
        let presented = Array(parts[1].drop(while: { $0 == " " }).utf8)
        // Compare with every token, always, so timing reveals neither which token nor how much
        // of one matched.
        var matched = false
        for token in tokens { matched = Authenticator.constantTimeEquals(token, presented) || matched }
        return matched ? nil : Authenticator.challenge("invalid bearer token", error: "invalid_token")
    }

    /// Equal-length inputs take the same time whatever their content; inputs of another length
    /// take time proportional to the expected token, not to the input.
    static func constantTimeEquals(_ expected: [UInt8], _ presented: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: expected.count ^ presented.count)
        difference |= expected.count == presented.count ? 0 : 1
        for i in 0..<expected.count {
            let p = i < presented.count ? presented[i] : 0
            difference |= expected[i] ^ p
        }
        return difference == 0
    }

    private static func challenge(_ detail: String, error: String?) -> HTTPResponse {
        var value = "Bearer realm=\"transferd\""
        if let error { value += ", error=\"\(error)\"" }
        return .problem(HTTPProblem(401, "unauthorized", detail), headers: HTTPHeaders([("WWW-Authenticate", value)]))
    }
}
