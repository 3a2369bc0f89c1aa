import Glibc
import TransferModel
import TransferVocabulary

/// A session's configuration as the engine applies it: the same limits, cookie policy,
/// credentials and proxy, and the TLS files read beneath the caller's allowed roots, so the
/// engine gets their contents and never opens a path itself.
extension SessionSettings {
    /// The engine's settings for a configuration, its TLS files read now: 403 `path_not_allowed`
    /// for a file outside `roots` (the caller's), 422 for one that cannot be read or is not PEM.
    package init(_ configuration: SessionConfiguration, roots: AllowedRoots) throws(Refusal) {
        self.init(withoutFiles: configuration)
        if let tls = configuration.tls { self.tls = try TLSSettings(tls, roots: roots) }
    }

    /// At start, for a session loaded from the store: its TLS files read again. A file that can
    /// no longer be read does not drop the session: its transfers fail with the reason (returned
    /// too, for the log) until a PUT fixes the configuration.
    static func restoring(_ configuration: SessionConfiguration, roots: AllowedRoots) -> (SessionSettings, unreadable: Refusal?) {
        var settings = SessionSettings(withoutFiles: configuration)
        guard let tls = configuration.tls else { return (settings, nil) }
        do {
            settings.tls = try TLSSettings(tls, roots: roots)
            return (settings, nil)
        } catch {
            let code: TaskErrorCode = error.field?.hasSuffix("ca_file") == true ? .serverCertificateUntrusted : .clientCertificateRejected
            settings.tls.unavailable = TransferFailure(code, error.detail)
            return (settings, error)
        }
    }

    private init(withoutFiles configuration: SessionConfiguration) {
        self.init()
        maxConcurrentTasks = configuration.maxConcurrentTasks
        maxConnectionsPerHost = configuration.maxConnectionsPerHost
        maxBytesPerSecond = configuration.maxBytesPerSecond
        discretionary = configuration.discretionary
        cookies = configuration.cookies
        credentials = configuration.credentials
        proxy = configuration.proxy
        tls.pinnedPublicKey = configuration.tls?.pinnedPublicKey
    }
}

extension TLSSettings {
    fileprivate init(_ tls: SessionConfiguration.TLS, roots: AllowedRoots) throws(Refusal) {
        self.init()
        let field = "configuration.tls."
        if let path = tls.caFile { caCertificates = try TLSSettings.readPEM(path, field: field + "ca_file", roots: roots) }
        if let path = tls.clientCertFile { clientCertificate = try TLSSettings.readPEM(path, field: field + "client_cert_file", roots: roots) }
        if let path = tls.clientKeyFile { clientKey = try TLSSettings.readPEM(path, field: field + "client_key_file", roots: roots) }
        pinnedPublicKey = tls.pinnedPublicKey
    }

    /// A PEM file beneath an allowed root (opened as `from_file` is: no `..`, no symlink out).
    private static func readPEM(_ path: String, field: String, roots: AllowedRoots) throws(Refusal) -> [UInt8] {
        let fd = try roots.openSourceFile(path, field: field)
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
