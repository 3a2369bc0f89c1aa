import TransferVocabulary

/// A session's `configuration` (openapi.yaml's `SessionConfiguration`), validated, with defaults filled in.
package struct SessionConfiguration: Sendable, Equatable {
    package struct Redirects: Sendable, Equatable {
        package var follow = true
        package var max = 16
    }

    package struct Retry: Sendable, Equatable {
        package var maxAttempts = 5
        package var backoffInitial: Double = 1
        package var backoffMax: Double = 300
        package var onHTTPStatus: [Int] = []
        /// The methods retried once the origin may have seen the request (a failure before
        /// that is retried whatever the method). RFC 9110 §9.2.2: a client "SHOULD NOT
        /// automatically retry a request with a non-idempotent method unless it has some means
        /// to know that the request semantics are actually idempotent" — the session says so
        /// here. Methods are case-sensitive (RFC 9110 §9.1).
        package var methods = Retry.idempotentMethods

        /// RFC 9110 §9.2.2's idempotent methods.
        package static let idempotentMethods = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]

        /// Whether a request with `method` may be tried again after it may have reached the origin.
        package func retries(_ method: String) -> Bool { methods.contains(method) }
    }

    /// Paths under an `--allow-path` root, read when the session is configured (and at start).
    package struct TLS: Sendable, Equatable {
        package var caFile: String?
        package var clientCertFile: String?
        package var clientKeyFile: String?
        package var pinnedPublicKey: String?
    }

    package var headers: [Header] = []
    /// Headers besides `SensitiveHeaders.always` whose values the API hides (lowercased names).
    package var sensitiveHeaders: [String] = []
    package var timeoutRequest: Double = 60
    package var timeoutResource: Double = 604_800
    package var maxConnectionsPerHost = 6
    package var maxConcurrentTasks = 64
    var waitsForConnectivity: Bool?
    package var discretionary = false
    /// Check the digests an origin declares of a download (`Repr-Digest`, `Content-Digest`,
    /// `Content-MD5`, `x-goog-hash`) against the file.
    package var verifyOriginDigests = true
    /// An origin status ≥ 400 (once retries are spent) fails the task with `http_error`, instead
    /// of completing it as URLSession does.
    package var failOnHTTPError = false
    package var cookies = CookiePolicy()
    /// The secrets (password or token) are never echoed, logged, or written anywhere for an
    /// ephemeral session.
    package var credentials: [Credential] = []
    package var redirects = Redirects()
    package var retry = Retry()
    package var maxBytesPerSecond: Int64?
    package var proxy: ProxySettings?
    package var tls: TLS?

    /// `waits_for_connectivity` defaults to true for background sessions only.
    package func waitsForConnectivity(mode: SessionMode) -> Bool { waitsForConnectivity ?? (mode == .background) }
}

/// A request header field, checked so it cannot smuggle a second header or request.
package struct Header: Sendable, Equatable {
    package let name: String
    package let value: String

    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
