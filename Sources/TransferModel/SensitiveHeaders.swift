/// Request headers whose values the API never shows: in task replies, events (and so webhooks)
/// and a session's configuration they read `<redacted>`, while the origin still gets them.
/// `Authorization`, `Proxy-Authorization` and `Cookie` always; others where a session lists them
/// in `configuration.sensitive_headers` (an API key in `X-Api-Key`, say).
package enum SensitiveHeaders {
    static let always: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// Whether the value of `name` is hidden, given a session's own list (lowercased names).
    static func hides(_ name: String, listed: [String]) -> Bool {
        let lowercased = name.lowercased()
        return always.contains(lowercased) || listed.contains(lowercased)
    }
}
