/// The stable error codes a task completes with, spelled as the API spells them (raw values).
public enum TaskErrorCode: String, Sendable, CaseIterable {
    case cancelled, interrupted, timedOut = "timed_out", cannotFindHost = "cannot_find_host"
    case cannotConnectToHost = "cannot_connect_to_host", networkConnectionLost = "network_connection_lost"
    case badURL = "bad_url", unsupportedURL = "unsupported_url", tooManyRedirects = "too_many_redirects"
    case badServerResponse = "bad_server_response", serverCertificateUntrusted = "server_certificate_untrusted"
    case clientCertificateRejected = "client_certificate_rejected"
    case userAuthenticationRequired = "user_authentication_required"
    case cannotWriteToFile = "cannot_write_to_file", cannotOpenFile = "cannot_open_file"
    case fileDoesNotExist = "file_does_not_exist", checksumMismatch = "checksum_mismatch"
    case blockedByPolicy = "blocked_by_policy", dataLengthExceedsMaximum = "data_length_exceeds_maximum"
    case resumeDataInvalid = "resume_data_invalid"
    /// The origin answered ≥ 400 and the session's `fail_on_http_error` makes that a failure.
    case httpError = "http_error"
}

/// Why an attempt failed: one of the stable error codes a task completes with (the same
/// vocabulary the task lifecycle uses), a message, and curl's own code when curl reported it.
public struct TransferFailure: Error, Sendable, Equatable {
    public let code: TaskErrorCode
    public let message: String
    /// libcurl's CURLcode, when curl reported the failure.
    public let curlCode: Int?
    /// Whether trying again may succeed (connect failures, resets, timeouts).
    public var isTransient: Bool {
        switch code {
        case .timedOut, .cannotConnectToHost, .networkConnectionLost, .cannotFindHost, .badServerResponse: true
        default: false
        }
    }

    public init(_ code: TaskErrorCode, _ message: String, curlCode: Int? = nil) {
        self.code = code
        self.message = message
        self.curlCode = curlCode
    }
}
