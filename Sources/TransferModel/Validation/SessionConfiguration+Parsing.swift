import JSON
import TransferVocabulary

extension SessionConfiguration {
    /// Validates a `configuration` object; every field is checked, and unknown ones refused.
    package static func parse(_ value: JSONValue?, field: String = "configuration") throws(Refusal) -> SessionConfiguration {
        var config = SessionConfiguration()
        guard let value else { return config }
        var r = try ObjectReader(value, path: field)
        var errors = FieldErrors()
        try errors.check { () throws(Refusal) in
            if let pairs = try r.stringMap("headers") {
                config.headers = try HeaderValidation.validate(pairs, field: r.field("headers"))
            }
        }
        try errors.check { () throws(Refusal) in
            if let items = try r.array("sensitive_headers", maxCount: 128) {
                config.sensitiveHeaders = try HeaderValidation.names(items, field: r.field("sensitive_headers"))
            }
        }
        // A reply sent back as a configuration fails instead of storing the marker as the value.
        try errors.check { () throws(Refusal) in
            for header in config.headers
            where header.value == redacted && SensitiveHeaders.hides(header.name, listed: config.sensitiveHeaders) {
                throw Refusal.invalid("\(r.field("headers")).\(header.name)", "is the redaction marker, not a value")
            }
        }
        try errors.check { () throws(Refusal) in config.timeoutRequest = try r.number("timeout_request_s", in: 1...86_400) ?? config.timeoutRequest }
        try errors.check { () throws(Refusal) in config.timeoutResource = try r.number("timeout_resource_s", in: 1...31_536_000) ?? config.timeoutResource }
        try errors.check { () throws(Refusal) in config.maxConnectionsPerHost = Int(try r.integer("max_connections_per_host", in: 1...1000) ?? 6) }
        try errors.check { () throws(Refusal) in config.maxConcurrentTasks = Int(try r.integer("max_concurrent_tasks", in: 1...100_000) ?? 64) }
        try errors.check { () throws(Refusal) in config.waitsForConnectivity = try r.bool("waits_for_connectivity") }
        try errors.check { () throws(Refusal) in config.discretionary = try r.bool("discretionary") ?? false }
        try errors.check { () throws(Refusal) in config.verifyOriginDigests = try r.bool("verify_origin_digests") ?? true }
        try errors.check { () throws(Refusal) in config.failOnHTTPError = try r.bool("fail_on_http_error") ?? false }
        try errors.check { () throws(Refusal) in
            if var c = try r.object("cookies") {
                if let accept = try c.string("accept") {
                    guard let a = CookiePolicy.Accept(rawValue: accept) else {
                        throw Refusal.invalid(c.field("accept"), "must be always, never or same_domain")
                    }
                    config.cookies.accept = a
                }
                config.cookies.send = try c.bool("send") ?? true
                try c.finish()
            }
        }
        try errors.check { () throws(Refusal) in
            if let items = try r.array("credentials", maxCount: 100) {
                config.credentials = try items.enumerated().map { (i, item) throws(Refusal) in
                    try parseCredential(item, field: "\(r.field("credentials"))[\(i)]")
                }
            }
        }
        try errors.check { () throws(Refusal) in
            if var c = try r.object("redirects") {
                config.redirects.follow = try c.bool("follow") ?? true
                config.redirects.max = Int(try c.integer("max", in: 0...100) ?? 16)
                try c.finish()
            }
        }
        try errors.check { () throws(Refusal) in
            if var c = try r.object("retry") { config.retry = try parseRetry(&c) }
        }
        // Below a kilobyte a second, a twentieth of a second is not a piece worth pausing for.
        try errors.check { () throws(Refusal) in config.maxBytesPerSecond = try r.integer("max_bytes_per_second", in: 1024...(1 << 50)) }
        try errors.check { () throws(Refusal) in
            if var p = try r.object("proxy") { config.proxy = try parseProxy(&p) }
        }
        try errors.check { () throws(Refusal) in
            if var t = try r.object("tls") { config.tls = try parseTLS(&t) }
        }
        try errors.check { () throws(Refusal) in try r.finish() }
        try errors.finish()
        return config
    }

    private static func parseRetry(_ c: inout ObjectReader) throws(Refusal) -> Retry {
        var retry = Retry()
        retry.maxAttempts = Int(try c.integer("max_attempts", in: 1...100) ?? 5)
        retry.backoffInitial = try c.number("backoff_initial_s", in: 0...86_400) ?? 1
        retry.backoffMax = try c.number("backoff_max_s", in: 0...86_400) ?? 300
        if let codes = try c.array("on_http_status", maxCount: 100) {
            retry.onHTTPStatus = try codes.enumerated().map { (i, v) throws(Refusal) in
                guard let n = v.intValue, (400...599).contains(n) else {
                    throw Refusal.invalid("\(c.field("on_http_status"))[\(i)]", "must be an HTTP status from 400 to 599")
                }
                return Int(n)
            }
        }
        if let methods = try c.array("methods", maxCount: 32) {
            retry.methods = try methods.enumerated().map { (i, v) throws(Refusal) in
                guard let method = v.stringValue, (1...32).contains(method.utf8.count),
                      method.utf8.allSatisfy(HeaderValidation.isTokenChar)
                else {
                    throw Refusal.invalid("\(c.field("methods"))[\(i)]", "must be an HTTP method (a token of 1 to 32 characters)")
                }
                return method
            }
        }
        guard retry.backoffInitial <= retry.backoffMax else {
            throw Refusal.invalid(c.field("backoff_initial_s"), "must not exceed backoff_max_s")
        }
        try c.finish()
        return retry
    }

    /// What the echo shows instead of a secret; refused as a secret, so a configuration read back
    /// and PUT again fails loudly instead of replacing the secret with this text.
    package static let redacted = "<redacted>"

    private static func parseProxy(_ p: inout ObjectReader) throws(Refusal) -> ProxySettings {
        let url = try p.requiredString("url", maxLength: 2048)
        guard let parts = URLParts(url), ["http", "https", "socks5", "socks5h"].contains(parts.scheme), !parts.host.isEmpty,
              !url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }), !url.contains(redacted)
        else {
            throw Refusal.invalid(p.field("url"), "must be an http, https, socks5 or socks5h URL")
        }
        let noProxy = try p.string("no_proxy", maxLength: 4096)
        // curl's list: names, domains, addresses or ranges, separated by commas (or spaces); `*`.
        if let noProxy, !noProxy.utf8.allSatisfy({ HeaderValidation.isTokenChar($0) || ",: /[]".utf8.contains($0) }) {
            throw Refusal.invalid(p.field("no_proxy"), "must be host names, domains or addresses separated by commas")
        }
        try p.finish()
        return ProxySettings(url: url, noProxy: noProxy)
    }

    private static func parseTLS(_ t: inout ObjectReader) throws(Refusal) -> TLS {
        var tls = TLS()
        func path(_ key: String, _ t: inout ObjectReader) throws(Refusal) -> String? {
            guard let value = try t.string(key, maxLength: 4096) else { return nil }
            guard value.hasPrefix("/"), !value.utf8.contains(0) else { throw Refusal.invalid(t.field(key), "must be an absolute path") }
            return value
        }
        tls.caFile = try path("ca_file", &t)
        tls.clientCertFile = try path("client_cert_file", &t)
        tls.clientKeyFile = try path("client_key_file", &t)
        tls.pinnedPublicKey = try t.string("pinned_public_key", maxLength: 4096)
        if let pin = tls.pinnedPublicKey {
            // curl's CURLOPT_PINNEDPUBLICKEY: sha256// then the base64 of a SHA-256, `;` between several.
            let hashes = pin.split(separator: ";", omittingEmptySubsequences: false)
            guard hashes.allSatisfy({ $0.hasPrefix("sha256//") && Base64.decode(String($0.dropFirst(8)))?.count == 32 }) else {
                throw Refusal.invalid(t.field("pinned_public_key"), "must be sha256//<base64 of a SHA-256>[;sha256//…]")
            }
        }
        if (tls.clientCertFile == nil) != (tls.clientKeyFile == nil) {
            throw Refusal.invalid(t.field(tls.clientKeyFile == nil ? "client_key_file" : "client_cert_file"),
                                   "client_cert_file and client_key_file go together")
        }
        try t.finish()
        return tls
    }

    private static func parseCredential(_ value: JSONValue, field: String) throws(Refusal) -> Credential {
        var c = try ObjectReader(value, path: field)
        let host = try parseHost(try c.requiredString("host", maxLength: 255), field: c.field("host"))
        let port = try c.integer("port", in: 1...65535).map { Int($0) }
        let pathPrefix = try c.string("path_prefix", maxLength: 2048)
        if let pathPrefix, !pathPrefix.hasPrefix("/") || pathPrefix.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
            throw Refusal.invalid(c.field("path_prefix"), "must be a URL path starting with /")
        }
        guard let scheme = Credential.Scheme(rawValue: try c.requiredString("scheme")) else {
            throw Refusal.invalid(c.field("scheme"), "must be basic, digest or bearer")
        }
        var credential = Credential(host: host, port: port, pathPrefix: pathPrefix, scheme: scheme, username: nil, secret: "")
        switch scheme {
        case .bearer:
            // Sent verbatim in the Authorization header: visible ASCII only (RFC 6750 §2.1's
            // b64token and the tokens in use), so it cannot break the header.
            credential.secret = try c.requiredString("token", maxLength: 8192)
            guard !credential.secret.isEmpty, credential.secret.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw Refusal.invalid(c.field("token"), "must be printable ASCII without spaces")
            }
        case .basic, .digest:
            let username = try c.requiredString("username", maxLength: 1024)
            // RFC 7617 §2: the user-id cannot contain a colon.
            guard !username.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }), scheme == .digest || !username.contains(":") else {
                throw Refusal.invalid(c.field("username"), "must not contain control characters\(scheme == .basic ? " or a colon" : "")")
            }
            credential.username = username
            credential.secret = try c.requiredString("password", maxLength: 8192)
            guard !credential.secret.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
                throw Refusal.invalid(c.field("password"), "must not contain control characters")
            }
        }
        if credential.secret == redacted {
            throw Refusal.invalid(c.field(scheme == .bearer ? "token" : "password"), "is the redaction marker, not a secret")
        }
        try c.finish()
        return credential
    }

    /// A host as curl spells it in a URL: a name or IPv4 address (lower-cased), or an IPv6
    /// address in brackets.
    private static func parseHost(_ text: String, field: String) throws(Refusal) -> String {
        let host = text.lowercased()
        let isName = host.utf8.allSatisfy(HeaderValidation.isTokenChar)
        let isIPv6 = host.hasPrefix("[") && host.hasSuffix("]") && host.utf8.count >= 4
            && host.utf8.dropFirst().dropLast().allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || $0 == 0x3A || $0 == 0x2E }
        guard !host.isEmpty, isName || isIPv6 else { throw Refusal.invalid(field, "must be a host name or an address") }
        return host
    }
}
