import CCurl
import Glibc
import TransferVocabulary

/// The options a session's configuration adds to each of its transfers: cookies, proxy, TLS
/// material and credentials.
extension EasyConfigurator {
    static func configureSession(_ h: UnsafeMutableRawPointer, _ transfer: Transfer) {
        let settings = transfer.session.settings
        configureCookies(h, transfer)
        configureProxy(h, settings.proxy)
        configureTLS(h, settings.tls)
        watchCertificateRequests(h, transfer)
        configureCredential(h, transfer)
    }

    /// curl's cookie engine for this one transfer, loaded with the session's jar: it picks the
    /// cookies for each request, redirects included, by domain, path, secure and expiry, and
    /// carries cookies set along the redirects of this transfer. The session's jar itself is
    /// kept by `Transfer.storeCookies`, by the session's accept policy. Without `send` the engine
    /// stays off (the pool hands such a transfer a handle that never had it on).
    private static func configureCookies(_ h: UnsafeMutableRawPointer, _ transfer: Transfer) {
        guard transfer.usesCookieEngine else { return }
        _ = transferd_easy_setopt_string(h, CURLOPT_COOKIEFILE, "")
        for cookie in transfer.session.jar.live(now: Int64(time(nil))) {
            _ = transferd_easy_setopt_string(h, CURLOPT_COOKIELIST, cookie.curlLine)
        }
    }

    /// Without a proxy, an empty one disables proxies outright, so `http_proxy` in the
    /// environment cannot reroute traffic around the network policy; with one, `NOPROXY` is set
    /// (empty when none is configured) so `no_proxy` in the environment does not apply either.
    /// The network policy sees the proxy's address: that is what the socket connects to.
    private static func configureProxy(_ h: UnsafeMutableRawPointer, _ proxy: ProxySettings?) {
        guard let proxy else {
            _ = transferd_easy_setopt_string(h, CURLOPT_PROXY, "")
            return
        }
        _ = transferd_easy_setopt_string(h, CURLOPT_PROXY, proxy.url)
        _ = transferd_easy_setopt_string(h, CURLOPT_NOPROXY, proxy.noProxy ?? "")
        // The proxy's answer to CONNECT is not the origin's response: keep it from the header
        // callback, which would take it for the final head.
        _ = transferd_easy_setopt_long(h, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
    }

    /// Verification stays on (curl's default, never switched off). A CA file replaces the
    /// system's trust store, so the session trusts exactly what it names.
    private static func configureTLS(_ h: UnsafeMutableRawPointer, _ tls: TLSSettings) {
        if let ca = tls.caCertificates {
            ca.withUnsafeBytes { _ = transferd_easy_setopt_blob(h, CURLOPT_CAINFO_BLOB, $0.baseAddress, $0.count) }
            _ = transferd_easy_setopt_ptr(h, CURLOPT_CAPATH, nil)
        }
        if let certificate = tls.clientCertificate, let key = tls.clientKey {
            certificate.withUnsafeBytes { _ = transferd_easy_setopt_blob(h, CURLOPT_SSLCERT_BLOB, $0.baseAddress, $0.count) }
            key.withUnsafeBytes { _ = transferd_easy_setopt_blob(h, CURLOPT_SSLKEY_BLOB, $0.baseAddress, $0.count) }
            _ = transferd_easy_setopt_string(h, CURLOPT_SSLCERTTYPE, "PEM")
            _ = transferd_easy_setopt_string(h, CURLOPT_SSLKEYTYPE, "PEM")
        }
        if let pin = tls.pinnedPublicKey {
            _ = transferd_easy_setopt_string(h, CURLOPT_PINNEDPUBLICKEY, pin)
        }
    }

    /// Notes whether the server asks for a client certificate during the handshake. Under TLS 1.3
    /// a server that refuses ours (or its absence) sends its alert after curl considers the
    /// handshake done; if the request crosses it, curl sees only a broken pipe or a reset and the
    /// alert is lost. Knowing the server asked tells that failure apart from a network one.
    static func watchCertificateRequests(_ h: UnsafeMutableRawPointer, _ transfer: Transfer) {
        _ = transferd_easy_setopt_ssl_ctx_cb(h, sslContextCallback)
        _ = transferd_easy_setopt_ptr(h, CURLOPT_SSL_CTX_DATA, Unmanaged.passUnretained(transfer).toOpaque())
    }

    /// The session's credential for the request's URL. `CURLOPT_UNRESTRICTED_AUTH` off: curl sends
    /// it only while the request goes to the same scheme, host and port as the first one, so a
    /// redirect elsewhere never carries it (nor a custom `Authorization` or `Cookie` header). A
    /// redirect to where the session holds another credential starts over there
    /// (`Transfer+Redirect.swift`), and this picks that one.
    private static func configureCredential(_ h: UnsafeMutableRawPointer, _ transfer: Transfer) {
        let credentials = transfer.session.settings.credentials
        _ = transferd_easy_setopt_long(h, CURLOPT_UNRESTRICTED_AUTH, 0)
        guard !credentials.isEmpty, let url = URLParts(transfer.requestURL),
              let credential = Credential.best(for: url, in: credentials) else { return }
        transfer.credential = credential
        switch credential.scheme {
        case .basic, .digest:
            _ = transferd_easy_setopt_string(h, CURLOPT_USERNAME, credential.username ?? "")
            _ = transferd_easy_setopt_string(h, CURLOPT_PASSWORD, credential.secret)
            // Basic alone is sent with the first request; digest answers the origin's challenge.
            let scheme = credential.scheme == .basic ? transferd_auth_basic() : transferd_auth_digest()
            _ = transferd_easy_setopt_long(h, CURLOPT_HTTPAUTH, scheme)
        case .bearer:
            _ = transferd_easy_setopt_string(h, CURLOPT_XOAUTH2_BEARER, credential.secret)
            _ = transferd_easy_setopt_long(h, CURLOPT_HTTPAUTH, transferd_auth_bearer())
        }
    }
}

/// Runs on the loop's thread inside curl, before the handshake of a connection this transfer opens
/// (a reused connection had its handshake, and its answer, with the transfer that opened it).
private let sslContextCallback: transferd_ssl_ctx_callback = { _, context, userdata in
    _ = transferd_ssl_ctx_set_cert_cb(context, certificateRequested, userdata)
    return CURLE_OK
}

private let certificateRequested: transferd_cert_callback = { _, userdata in
    Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue().serverRequestedClientCertificate = true
    return 1  // go on, with whatever certificate curl configured (or none)
}
