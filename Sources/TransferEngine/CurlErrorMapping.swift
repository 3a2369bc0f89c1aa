import CCurl
import TransferVocabulary

/// CURLcode → the stable error codes a task completes with. Codes curl reports for conditions we detect
/// ourselves (policy refusals, size caps, write errors) are refined by the transfer before this.
enum CurlErrorMapping {
    /// `certificateRequested`: the server asked for a client certificate and never answered.
    /// `inHead`: no final response head had arrived.
    static func failure(_ code: CURLcode, detail: String, certificateRequested: Bool = false, inHead: Bool = false) -> TransferFailure {
        let raw = Int(code.rawValue)
        let mapped: TaskErrorCode = switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .cannotFindHost
        case CURLE_COULDNT_CONNECT: .cannotConnectToHost
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_URL_MALFORMAT: .badURL
        case CURLE_UNSUPPORTED_PROTOCOL: .unsupportedURL
        case CURLE_TOO_MANY_REDIRECTS: .tooManyRedirects
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
             CURLE_SSL_ISSUER_ERROR, CURLE_SSL_INVALIDCERTSTATUS:
            .serverCertificateUntrusted
        case CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER: .clientCertificateRejected
        case CURLE_LOGIN_DENIED, CURLE_AUTH_ERROR: .userAuthenticationRequired
        case CURLE_WRITE_ERROR: .cannotWriteToFile
        case CURLE_READ_ERROR: .cannotOpenFile
        case CURLE_FILESIZE_EXCEEDED: .dataLengthExceedsMaximum
        case CURLE_ABORTED_BY_CALLBACK: .cancelled
        case CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_CONTENT_ENCODING, CURLE_HTTP2, CURLE_HTTP2_STREAM,
             CURLE_RANGE_ERROR, CURLE_HTTP_RETURNED_ERROR:
            .badServerResponse
        default: .networkConnectionLost  // RECV/SEND errors, GOT_NOTHING, PARTIAL_FILE, SSL_CONNECT…
        }
        let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        if let failure = unreadableHead(code, message: message, inHead: inHead) { return failure }
        if [CURLE_SSL_CONNECT_ERROR, CURLE_RECV_ERROR, CURLE_SEND_ERROR].contains(code), isCertificateAlert(message) {
            return TransferFailure(.clientCertificateRejected, message, curlCode: raw)
        }
        if [CURLE_SSL_CONNECT_ERROR, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING].contains(code), certificateRequested {
            return TransferFailure(.clientCertificateRejected,
                                   "the server asked for a client certificate, then closed the connection (\(message))", curlCode: raw)
        }
        return TransferFailure(mapped, message, curlCode: raw)
    }

    /// A response head no client should read, the origin's fault (`bad_server_response`), not
    /// the network's or the URL's:
    /// - past curl's bounds: all its fields together over 300 KiB (Debian's fix of
    ///   CVE-2023-38039, curl 8.3's `MAX_HTTP_RESP_HEADER_SIZE`: "Too large response headers", as
    ///   a receive error), or one field line over `CURL_MAX_HTTP_HEADER` (100 KiB), which curl
    ///   7.88 reports as out of memory (it has no CURLOPT_MAXHEADERSIZE to lower either). curl
    ///   stops reading there, so memory stays bounded;
    /// - no status line at all, which curl would take for HTTP/0.9 (never allowed).
    static func unreadableHead(_ code: CURLcode, message: String, inHead: Bool) -> TransferFailure? {
        let raw = Int(code.rawValue)
        if code == CURLE_RECV_ERROR, message.contains("Too large response headers") {
            return TransferFailure(.badServerResponse, "the response head is too large: \(message)", curlCode: raw)
        }
        if code == CURLE_UNSUPPORTED_PROTOCOL, message.contains("HTTP/0.9") {
            return TransferFailure(.badServerResponse, message, curlCode: raw)
        }
        if code == CURLE_OUT_OF_MEMORY, inHead {
            return TransferFailure(.badServerResponse, "a response header field is longer than curl's 100 KiB limit", curlCode: raw)
        }
        return nil
    }

    /// A server that refuses the client's certificate (or the lack of one) ends the handshake with
    /// an alert (RFC 8446 §6.2: `certificate_required`, `bad_certificate`, `unknown_ca`,
    /// `certificate_expired`…). curl reports it as a connect, receive or send error — under TLS
    /// 1.3 it arrives after curl considers the handshake done — with OpenSSL's text, e.g.
    /// "tlsv13 alert certificate required". Our own verification of the server fails
    /// differently (CURLE_PEER_FAILED_VERIFICATION), so an alert about a certificate is the
    /// server's verdict on ours.
    static func isCertificateAlert(_ message: String) -> Bool {
        let text = message.lowercased()
        return text.contains("alert") && (text.contains("certificate") || text.contains("unknown ca"))
    }
}
