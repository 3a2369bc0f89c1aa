import Lifecycles
import Glibc
import TransferEngine
import TransferModel

/// A session's configuration as the engine applies it (`SessionSettings`): limits, bandwidth,
/// scheduling, cookies, credentials, proxy, and the TLS files read beneath the allowed roots.
extension TaskCoordinator {
    /// The engine's settings for a configuration, its TLS files read now: 403 `path_not_allowed`
    /// for a file outside `roots` (the caller's), 422 for one that cannot be read or is not PEM.
    package func engineSettings(for configuration: SessionConfiguration, roots: AllowedRoots) throws(Refusal) -> SessionSettings {
        var settings = configuration.settingsWithoutFiles
        if let tls = configuration.tls { settings.tls = try loadTLS(tls, roots: roots) }
        return settings
    }

    /// Applies a session's settings to the engine. `cookies`: nil keeps the session's jar, `[]`
    /// starts it empty. A durable session's jar is written to the store when it changes.
    func configureEngine(_ session: SessionState, settings: SessionSettings, cookies: [Cookie]?) {
        engine.configure(session: session.identifier, settings: settings,
                         cookieStorage: session.mode.isDurable ? self : nil, cookies: cookies)
    }

    /// At start, for a session loaded from the store: its stored cookies, and its TLS files read
    /// again. A file that can no longer be read does not drop the session: its transfers fail
    /// with the reason until a PUT fixes the configuration.
    func restoreEngine(_ session: SessionState) {
        let configuration = session.locked { session.configuration }
        var settings = configuration.settingsWithoutFiles
        if let tls = configuration.tls {
            do {
                settings.tls = try loadTLS(tls, roots: allowedRoots)
            } catch {
                logger.error("cannot read a session's TLS files; its transfers will fail",
                             metadata: ["session": .string(session.identifier), "error": .string(error.detail)])
                let code: TaskErrorCode = error.field?.hasSuffix("ca_file") == true ? .serverCertificateUntrusted : .clientCertificateRejected
                settings.tls.unavailable = TransferFailure(code, error.detail)
            }
        }
        var cookies: [Cookie] = []
        do {
            cookies = try store.loadCookies(session: session.identifier)
        } catch {
            logger.error("cannot load a session's cookies", metadata: ["session": .string(session.identifier), "error": "\(error)"])
        }
        configureEngine(session, settings: settings, cookies: cookies)
    }

    private func loadTLS(_ tls: SessionConfiguration.TLS, roots: AllowedRoots) throws(Refusal) -> TLSSettings {
        var settings = TLSSettings()
        let field = "configuration.tls."
        if let path = tls.caFile { settings.caCertificates = try readPEM(path, field: field + "ca_file", roots: roots) }
        if let path = tls.clientCertFile { settings.clientCertificate = try readPEM(path, field: field + "client_cert_file", roots: roots) }
        if let path = tls.clientKeyFile { settings.clientKey = try readPEM(path, field: field + "client_key_file", roots: roots) }
        settings.pinnedPublicKey = tls.pinnedPublicKey
        return settings
    }

    /// A PEM file beneath an allowed root (opened as `from_file` is: no `..`, no symlink out).
    private func readPEM(_ path: String, field: String, roots: AllowedRoots) throws(Refusal) -> [UInt8] {
        let fd = try openSourceFile(path, field: field, roots: roots)
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw Refusal(.invalid, "cannot_open_file", "\(path) cannot be read", field: field) }
            if n == 0 { break }
            bytes += buffer[0..<n]
            guard bytes.count <= 1 << 20 else { throw Refusal.invalid(field, "is larger than 1 MiB") }
        }
        guard String(decoding: bytes, as: UTF8.self).contains("-----BEGIN ") else {
            throw Refusal.invalid(field, "is not a PEM file")
        }
        return bytes
    }
}

/// The engine's credential type (inside `SessionConfiguration`, `Credential` is the API's).
typealias EngineCredential = Credential

extension SessionConfiguration {
    /// Everything but the TLS files, which the coordinator reads.
    var settingsWithoutFiles: SessionSettings {
        var s = SessionSettings()
        s.maxConcurrentTasks = maxConcurrentTasks
        s.maxConnectionsPerHost = maxConnectionsPerHost
        s.maxBytesPerSecond = maxBytesPerSecond
        s.discretionary = discretionary
        s.cookies = CookiePolicy(accept: cookies.accept.engineValue, send: cookies.send)
        s.credentials = credentials.map { c in
            let scheme: EngineCredential.Scheme = switch c.scheme {
            case .basic: .basic
            case .digest: .digest
            case .bearer: .bearer
            }
            return EngineCredential(host: c.host, port: c.port, pathPrefix: c.pathPrefix, scheme: scheme,
                                             username: c.username ?? "", secret: c.secret)
        }
        s.proxy = proxy.map { ProxySettings(url: $0.url, noProxy: $0.noProxy) }
        s.tls.pinnedPublicKey = tls?.pinnedPublicKey
        return s
    }
}

extension SessionConfiguration.Cookies.Accept {
    var engineValue: CookiePolicy.Accept {
        switch self {
        case .always: .always
        case .never: .never
        case .sameDomain: .sameDomain
        }
    }
}
