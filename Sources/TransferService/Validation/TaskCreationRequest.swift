import TransferEngine

/// A validated `POST …/tasks` body (one element of `tasks:batch`).
struct TaskCreationRequest: Sendable {
    var id: String?
    var kind: TaskKind
    var url: String
    var method: String
    var headers: [Header]
    var body: BodySource?
    var destination: String?
    var checksumSHA256: String?
    var priority: Double
    var beginAt: Timestamp?
    var description: String?
    var start: Bool

    static func parse(_ value: JSONValue, field: String) throws(APIError) -> TaskCreationRequest {
        var r = try ObjectReader(value, path: field)
        let kindText = try r.requiredString("kind")
        guard let kind = TaskKind(rawValue: kindText), kind != .upload else {
            throw APIError.invalid(r.field("kind"), "must be data or download")
        }
        let id = try r.string("id", maxLength: 200)
        if let id, !IdentifierValidation.isValid(id) {
            throw APIError.invalid(r.field("id"), "must be 1–200 characters of A-Z a-z 0-9 . _ - (not . or ..)")
        }
        guard var request = try r.object("request") else { throw APIError.invalid(r.field("request"), "is required") }
        let url = try request.requiredString("url", maxLength: 8192)
        try validateURL(url, field: request.field("url"))
        let method = try request.string("method", maxLength: 32) ?? "GET"
        guard !method.isEmpty, method.utf8.allSatisfy(HeaderValidation.isTokenChar) else {
            throw APIError.invalid(request.field("method"), "is not a valid HTTP method")
        }
        let headers = try HeaderValidation.validate(try request.stringMap("headers") ?? [], field: request.field("headers"))
        let body = try parseBody(&request)
        try request.finish()

        var destination: String?
        if var d = try r.object("download") {
            guard kind == .download else { throw APIError.invalid(d.path, "is only for download tasks") }
            destination = try d.requiredString("destination", maxLength: 4096)
            try d.finish()
        }
        var checksum: String?
        if var c = try r.object("checksum") {
            let hex = try c.requiredString("sha256").lowercased()
            guard hex.utf8.count == 64, hex.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
                throw APIError.invalid(c.field("sha256"), "must be 64 hexadecimal digits")
            }
            guard kind == .download else { throw APIError.invalid(c.path, "is only for download tasks") }
            checksum = hex
            try c.finish()
        }
        let priority = try r.number("priority", in: 0...1) ?? 0.5
        var beginAt: Timestamp?
        if let text = try r.string("begin_at", maxLength: 64) {
            guard let t = Timestamp(rfc3339: text) else {
                throw APIError.invalid(r.field("begin_at"), "must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z")
            }
            beginAt = t
        }
        let description = try r.string("description", maxLength: 4096)
        let start = try r.bool("start") ?? true
        try r.finish()
        return TaskCreationRequest(id: id, kind: kind, url: url, method: method, headers: headers, body: body,
                                   destination: destination, checksumSHA256: checksum, priority: priority,
                                   beginAt: beginAt, description: description, start: start)
    }

    /// Only absolute http and https URLs (PRODUCT.md "Security"), as curl parses them.
    static func validateURL(_ url: String, field: String) throws(APIError) {
        guard let parts = URLParts(url), !parts.host.isEmpty || !parts.isHTTP else {
            throw APIError.invalid(field, "is not a valid absolute URL", code: "bad_url")
        }
        guard parts.isHTTP else {
            throw APIError.invalid(field, "scheme \(parts.scheme) is not supported; only http and https", code: "unsupported_url")
        }
    }

    private static func parseBody(_ request: inout ObjectReader) throws(APIError) -> BodySource? {
        guard var b = try request.object("body") else { return nil }
        let text = try b.string("text", maxLength: 1 << 20)
        let base64 = try b.string("base64", maxLength: 4 << 20)
        try b.finish()
        switch (text, base64) {
        case (let t?, nil): return .text(t)
        case (nil, let e?):
            guard let decoded = Base64.decode(e) else { throw APIError.invalid(b.field("base64"), "is not valid base64") }
            return .base64(e, decoded: decoded)
        default:
            throw APIError.invalid(b.path, "needs exactly one of text or base64")
        }
    }
}
