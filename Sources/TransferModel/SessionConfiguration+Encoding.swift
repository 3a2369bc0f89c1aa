import JSON

extension SessionConfiguration {
    /// The configuration as `GET` echoes it: defaults filled in, secrets redacted.
    package func encode(into json: inout JSONWriter, mode: SessionMode) {
        json.beginObject()
        json.key("headers"); TaskRecord.encodeHeaders(headers, hiding: sensitiveHeaders, into: &json)
        json.key("sensitive_headers"); json.beginArray(); sensitiveHeaders.forEach { json.string($0) }; json.endArray()
        json.key("timeout_request_s"); json.double(timeoutRequest)
        json.key("timeout_resource_s"); json.double(timeoutResource)
        json.key("max_connections_per_host"); json.int(maxConnectionsPerHost)
        json.key("max_concurrent_tasks"); json.int(maxConcurrentTasks)
        json.key("waits_for_connectivity"); json.bool(waitsForConnectivity(mode: mode))
        json.key("discretionary"); json.bool(discretionary)
        json.key("verify_origin_digests"); json.bool(verifyOriginDigests)
        json.key("fail_on_http_error"); json.bool(failOnHTTPError)
        json.key("cookies"); json.beginObject()
        json.key("accept"); json.string(cookies.accept.rawValue)
        json.key("send"); json.bool(cookies.send)
        json.endObject()
        json.key("credentials"); json.beginArray()
        for c in credentials {
            json.beginObject()
            json.key("host"); json.string(c.host)
            if let port = c.port { json.key("port"); json.int(port) }
            if let prefix = c.pathPrefix { json.key("path_prefix"); json.string(prefix) }
            json.key("scheme"); json.string(c.scheme.rawValue)
            if let u = c.username { json.key("username"); json.string(u) }
            json.key(c.scheme == .bearer ? "token" : "password"); json.string(SessionConfiguration.redacted)
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
        json.key("methods"); json.beginArray(); retry.methods.forEach { json.string($0) }; json.endArray()
        json.endObject()
        json.key("max_bytes_per_second"); if let m = maxBytesPerSecond { json.int(m) } else { json.null() }
        json.key("proxy")
        if let proxy {
            json.beginObject()
            json.key("url"); json.string(SessionConfiguration.redactingPassword(proxy.url))
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

    /// `scheme://user:secret@host…` → `scheme://user:<redacted>@host…`.
    static func redactingPassword(_ url: String) -> String {
        let chars = Array(url)
        guard let slashes = (0..<max(0, chars.count - 2)).first(where: { chars[$0] == ":" && chars[$0 + 1] == "/" && chars[$0 + 2] == "/" })
        else { return url }
        let start = slashes + 3
        let authorityEnd = chars[start...].firstIndex { "/?#".contains($0) } ?? chars.count
        guard let at = chars[start..<authorityEnd].lastIndex(of: "@"),
              let colon = chars[start..<at].firstIndex(of: ":") else { return url }
        return String(chars[...colon]) + redacted + String(chars[at...])
    }
}
