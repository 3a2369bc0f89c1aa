import CCurl

/// CURLcode → the stable error codes of PRODUCT.md. Codes curl reports for conditions we detect
/// ourselves (policy refusals, size caps, write errors) are refined by the transfer before this.
enum CurlErrorMapping {
    static func failure(_ code: CURLcode, detail: String) -> TransferFailure {
        let raw = Int(code.rawValue)
        let mapped: TransferErrorCode = switch code {
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
        return TransferFailure(mapped, message, curlCode: raw)
    }
}
