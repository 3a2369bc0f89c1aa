import Glibc
import JSON
import Testing
@testable import TransferCore
@testable import TransferModel
import TransferVocabulary

/// A session's configuration as the engine gets it: the same values, and the TLS files read
/// beneath the caller's roots.
struct SessionSettingsTests {
    private static func configuration(_ json: String) throws -> SessionConfiguration {
        try SessionConfiguration.parse(try JSONParser.parse(Array(json.utf8)))
    }

    /// A root holding a PEM file and a file that is not PEM; and a PEM file outside it.
    private static func files() -> (base: String, roots: AllowedRoots) {
        let base = makeRoot()
        for (path, text) in [("/root/ca.pem", "-----BEGIN CERTIFICATE-----\nx\n"), ("/root/plain.txt", "not a certificate"),
                             ("/outside/ca.pem", "-----BEGIN CERTIFICATE-----\nx\n")] {
            let fd = open(base + path, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
            _ = text.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
        return (base, try! AllowedRoots(paths: [base + "/root"]))
    }

    @Test func theConfigurationReachesTheEngineAsItIs() throws {
        let configuration = try Self.configuration("""
            {"max_concurrent_tasks": 3, "max_connections_per_host": 2, "max_bytes_per_second": 4096, "discretionary": true,
             "cookies": {"accept": "same_domain", "send": false},
             "credentials": [{"host": "a.example", "port": 8443, "path_prefix": "/p", "scheme": "basic", "username": "u", "password": "s"},
                             {"host": "b.example", "scheme": "bearer", "token": "t"}],
             "proxy": {"url": "http://proxy.example:3128", "no_proxy": "localhost"},
             "tls": {"pinned_public_key": "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}
            """)
        let settings = try SessionSettings(configuration, roots: Self.files().roots)
        #expect(settings.maxConcurrentTasks == 3 && settings.maxConnectionsPerHost == 2)
        #expect(settings.maxBytesPerSecond == 4096 && settings.discretionary)
        #expect(settings.cookies == CookiePolicy(accept: .sameDomain, send: false))
        #expect(settings.credentials == configuration.credentials)
        #expect(settings.credentials.map(\.username) == ["u", nil])
        #expect(settings.proxy == ProxySettings(url: "http://proxy.example:3128", noProxy: "localhost"))
        #expect(settings.tls.pinnedPublicKey == configuration.tls?.pinnedPublicKey && settings.tls.caCertificates == nil)
    }

    @Test func tlsFilesAreReadBeneathTheRoots() throws {
        let (base, roots) = Self.files()
        let read = try SessionSettings(try Self.configuration(#"{"tls": {"ca_file": "\#(base)/root/ca.pem"}}"#), roots: roots)
        #expect(read.tls.caCertificates.map { String(decoding: $0, as: UTF8.self) } == "-----BEGIN CERTIFICATE-----\nx\n")

        let outside = try Self.configuration(#"{"tls": {"ca_file": "\#(base)/outside/ca.pem"}}"#)
        #expect { try SessionSettings(outside, roots: roots) } throws: { error in
            (error as? Refusal).map { $0.code == "path_not_allowed" && $0.field == "configuration.tls.ca_file" } ?? false
        }
        let notPEM = try Self.configuration(#"{"tls": {"ca_file": "\#(base)/root/plain.txt"}}"#)
        #expect { try SessionSettings(notPEM, roots: roots) } throws: { error in
            (error as? Refusal).map { $0.reason == .invalid && $0.field == "configuration.tls.ca_file" } ?? false
        }
    }

    /// At start, a TLS file that can no longer be read keeps the session; its transfers fail.
    @Test func anUnreadableFileAtStartFailsTheTransfers() throws {
        let (base, roots) = Self.files()
        let ca = try Self.configuration(#"{"tls": {"ca_file": "\#(base)/root/gone.pem"}}"#)
        let (settings, unreadable) = SessionSettings.restoring(ca, roots: roots)
        #expect(unreadable?.code == "file_does_not_exist")
        #expect(settings.tls.unavailable?.code == .serverCertificateUntrusted)

        let client = try Self.configuration(
            #"{"tls": {"client_cert_file": "\#(base)/root/plain.txt", "client_key_file": "\#(base)/root/plain.txt"}}"#)
        #expect(SessionSettings.restoring(client, roots: roots).0.tls.unavailable?.code == .clientCertificateRejected)

        let readable = try Self.configuration(#"{"tls": {"ca_file": "\#(base)/root/ca.pem"}}"#)
        let (restored, none) = SessionSettings.restoring(readable, roots: roots)
        #expect(none == nil && restored.tls.unavailable == nil && restored.tls.caCertificates != nil)
    }
}
