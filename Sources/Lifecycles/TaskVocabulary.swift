/// The words a task's lifecycle is told in, spelled as the API spells them (raw values), so the
/// API model can take them over from here.

/// URLSession's four task states.
public enum TaskState: String, Sendable, CaseIterable {
    case suspended, running, canceling, completed
}

/// Finer than the state: where a task is.
public enum TaskPhase: String, Sendable, CaseIterable {
    case waiting, scheduled, connecting, transferring, retrying, finished
}

/// How a session keeps its tasks: what a restart of the process does to them.
public enum SessionMode: String, Sendable, CaseIterable {
    /// Everything durable; running tasks continue after a restart.
    case background
    /// Tasks do not outlive the process: an unfinished one completes `interrupted` at the next start.
    case `default`
    /// Nothing on disk: its tasks vanish with the process.
    case ephemeral
}

/// The stable error codes a task completes with.
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
