import HTTPServer
import TransferEngine

extension SessionConfiguration {
    /// Validates a `configuration` object; every field is checked, and unknown ones refused.
    static func parse(_ value: JSONValue?, field: String = "configuration") throws(APIError) -> SessionConfiguration {
        var config = SessionConfiguration()
        guard let value else { return config }
        var r = try ObjectReader(value, path: field)
        if let pairs = try r.stringMap("headers") {
            config.headers = try HeaderValidation.validate(pairs, field: r.field("headers"))
        }
        config.timeoutRequest = try r.number("timeout_request_s", in: 1...86_400) ?? config.timeoutRequest
        config.timeoutResource = try r.number("timeout_resource_s", in: 1...31_536_000) ?? config.timeoutResource
        config.maxConnectionsPerHost = Int(try r.integer("max_connections_per_host", in: 1...1000) ?? 6)
        config.maxConcurrentTasks = Int(try r.integer("max_concurrent_tasks", in: 1...100_000) ?? 64)
        config.waitsForConnectivity = try r.bool("waits_for_connectivity")
        config.discretionary = try r.bool("discretionary") ?? false
        if var c = try r.object("cookies") {
            if let accept = try c.string("accept") {
                guard let a = Cookies.Accept(rawValue: accept) else {
                    throw APIError.invalid(c.field("accept"), "must be always, never or same_domain")
                }
                config.cookies.accept = a
            }
            config.cookies.send = try c.bool("send") ?? true
            try c.finish()
        }
        if let items = try r.array("credentials", maxCount: 100) {
            config.credentials = try items.enumerated().map { (i, item) throws(APIError) in
                try parseCredential(item, field: "\(r.field("credentials"))[\(i)]")
            }
        }
        if var c = try r.object("redirects") {
            config.redirects.follow = try c.bool("follow") ?? true
            config.redirects.max = Int(try c.integer("max", in: 0...100) ?? 16)
            try c.finish()
        }
        if var c = try r.object("retry") {
            config.retry.maxAttempts = Int(try c.integer("max_attempts", in: 1...100) ?? 5)
            config.retry.backoffInitial = try c.number("backoff_initial_s", in: 0...86_400) ?? 1
            config.retry.backoffMax = try c.number("backoff_max_s", in: 0...86_400) ?? 300
            if let codes = try c.array("on_http_status", maxCount: 100) {
                config.retry.onHTTPStatus = try codes.enumerated().map { (i, v) throws(APIError) in
                    guard let n = v.intValue, (400...599).contains(n) else {
                        throw APIError.invalid("\(c.field("on_http_status"))[\(i)]", "must be an HTTP status from 400 to 599")
                    }
                    return Int(n)
                }
            }
            guard config.retry.backoffInitial <= config.retry.backoffMax else {
                throw APIError.invalid(c.field("backoff_initial_s"), "must not exceed backoff_max_s")
            }
            try c.finish()
        }
        config.maxBytesPerSecond = try r.integer("max_bytes_per_second", in: 1...(1 << 50))
        if var p = try r.object("proxy") {
            let url = try p.requiredString("url", maxLength: 2048)
            guard let parts = URLParts(url), ["http", "https", "socks5", "socks5h"].contains(parts.scheme), !parts.host.isEmpty else {
                throw APIError.invalid(p.field("url"), "must be an http, https, socks5 or socks5h URL")
            }
            config.proxy = Proxy(url: url, noProxy: try p.string("no_proxy", maxLength: 4096))
            try p.finish()
        }
        if var t = try r.object("tls") {
            var tls = TLS()
            tls.caFile = try t.string("ca_file", maxLength: 4096)
            tls.clientCertFile = try t.string("client_cert_file", maxLength: 4096)
            tls.clientKeyFile = try t.string("client_key_file", maxLength: 4096)
            tls.pinnedPublicKey = try t.string("pinned_public_key", maxLength: 4096)
            if let pin = tls.pinnedPublicKey, !pin.hasPrefix("sha256//") {
                throw APIError.invalid(t.field("pinned_public_key"), "must be sha256//<base64>[;sha256//…]")
            }
            if (tls.clientCertFile == nil) != (tls.clientKeyFile == nil) {
                throw APIError.invalid(t.field("client_key_file"), "client_cert_file and client_key_file go together")
            }
            try t.finish()
            config.tls = tls
        }
        try r.finish()
        return config
    }

    private static func parseCredential(_ value: JSONValue, field: String) throws(APIError) -> Credential {
        var c = try ObjectReader(value, path: field)
        let host = try c.requiredString("host", maxLength: 253).lowercased()
        guard !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x2F }) else {
            throw APIError.invalid(c.field("host"), "must be a host name")
        }
        guard let scheme = Credential.Scheme(rawValue: try c.requiredString("scheme")) else {
            throw APIError.invalid(c.field("scheme"), "must be basic, digest or bearer")
        }
        let credential: Credential
        switch scheme {
        case .bearer:
            credential = Credential(host: host, scheme: scheme, username: nil, secret: try c.requiredString("token", maxLength: 8192))
        case .basic, .digest:
            credential = Credential(host: host, scheme: scheme, username: try c.requiredString("username", maxLength: 1024),
                                    secret: try c.requiredString("password", maxLength: 8192))
        }
        try c.finish()
        return credential
    }

    /// The configuration as `GET` echoes it: defaults filled in, secrets redacted.
    func encode(into json: inout JSONWriter, mode: SessionMode) {
        json.beginObject()
        json.key("headers"); TaskRecord.encodeHeaders(headers, into: &json)
        json.key("timeout_request_s"); json.double(timeoutRequest)
        json.key("timeout_resource_s"); json.double(timeoutResource)
        json.key("max_connections_per_host"); json.int(maxConnectionsPerHost)
        json.key("max_concurrent_tasks"); json.int(maxConcurrentTasks)
        json.key("waits_for_connectivity"); json.bool(waitsForConnectivity(mode: mode))
        json.key("discretionary"); json.bool(discretionary)
        json.key("cookies"); json.beginObject()
        json.key("accept"); json.string(cookies.accept.rawValue)
        json.key("send"); json.bool(cookies.send)
        json.endObject()
        json.key("credentials"); json.beginArray()
        for c in credentials {
            json.beginObject()
            json.key("host"); json.string(c.host)
            json.key("scheme"); json.string(c.scheme.rawValue)
            if let u = c.username { json.key("username"); json.string(u) }
            json.key(c.scheme == .bearer ? "token" : "password"); json.string("<redacted>")
            json.endObject()
        }
        json.endArray()
        json.key("redirects"); json.beginObject()
        json.key("follow"); json.bool(redirects.follow)
        json.key("max"); json.int(redirects.max)
        json.endObject()
        json.key("retry"); json.beginObject()
        json.key("max_attempts"); json.int(retry.maxAttempts)
        json.key("backoff_initial_s"); json.double(retry.backoffInitial)
        json.key("backoff_max_s"); json.double(retry.backoffMax)
        json.key("on_http_status"); json.beginArray(); retry.onHTTPStatus.forEach { json.int($0) }; json.endArray()
        json.endObject()
        json.key("max_bytes_per_second"); if let m = maxBytesPerSecond { json.int(m) } else { json.null() }
        json.key("proxy")
        if let proxy {
            json.beginObject()
            json.key("url"); json.string(proxy.url)
            json.key("no_proxy"); json.optionalString(proxy.noProxy)
            json.endObject()
        } else {
            json.null()
        }
        json.key("tls")
        if let tls {
            json.beginObject()
            json.key("ca_file"); json.optionalString(tls.caFile)
            json.key("client_cert_file"); json.optionalString(tls.clientCertFile)
            json.key("client_key_file"); json.optionalString(tls.clientKeyFile)
            json.key("pinned_public_key"); json.optionalString(tls.pinnedPublicKey)
            json.endObject()
        } else {
            json.null()
        }
        json.endObject()
    }
}
