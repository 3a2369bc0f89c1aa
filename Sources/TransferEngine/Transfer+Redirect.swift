import CCurl
import TransferVocabulary

/// A redirect whose target needs another credential than curl would send there: the transfer
/// stops following it inside curl and starts again at the target (`MultiLoop.restart`).
struct CredentialRedirect: Equatable, Sendable {
    var url: String
    var method: String
    var sendsBody: Bool
}

/// Credentials chosen again for every redirect's URL. curl picks a credential once, for the
/// first URL, and with `CURLOPT_UNRESTRICTED_AUTH` off sends it only to that URL's scheme, host
/// and port (curl's `Curl_auth_allowed_to_host`), so it can neither offer a credential the
/// session holds for the target host (or its path prefix) nor stop sending one whose path
/// prefix the target leaves. When what curl would send differs from what the session wants,
/// the transfer ends that hop and starts again at the target, as its new first URL.
extension Transfer {
    /// Whether the redirect to `target` (answered with `status`) is followed by a restart, set
    /// up in the lifecycle; false leaves the redirect to curl.
    func restartsForCredential(to target: String, status: Int) -> Bool {
        let credentials = session.settings.credentials
        guard !credentials.isEmpty, let to = URLParts(target), to.isHTTP, let easy,
              let from = URLParts(requestURL) else { return false }
        // Past the task's redirect limit curl ends the transfer with too_many_redirects itself.
        let followed = CurlInfo.long(easy, CURLINFO_REDIRECT_COUNT)
        guard redirectsBefore + followed + 1 <= spec.maxRedirects else { return false }
        let wanted = Credential.best(for: to, in: credentials)
        let curlSends = to.hostKey == from.hostKey ? credential : nil
        guard wanted != curlSends else { return false }
        // The method curl would use on this hop (RFC 9110 §15.4: 303 turns into GET, and so do
        // 301/302 after a POST, as curl does without CURLOPT_POSTREDIR); 307/308 keep it and
        // the body.
        var method = requestMethod, sendsBody = self.sendsBody
        if (status == 303 && method != "HEAD") || ([301, 302].contains(status) && method == "POST") {
            method = "GET"
            sendsBody = false
        }
        redirectsBefore += followed + 1
        note(.redirect(CredentialRedirect(url: target, method: method, sendsBody: sendsBody)))
        return true
    }

    /// Back to the state before the first response, for the request to the redirect's target.
    func beginRedirect(_ redirect: CredentialRedirect) {
        requestURL = redirect.url
        requestMethod = redirect.method
        sendsBody = redirect.sendsBody
        credential = nil
        writeFailure = nil
        collector = ResponseCollector()
        _ = seek(to: 0)
    }

    /// The task's own headers for the current request: a custom `Authorization` or `Cookie`
    /// stays with the task's first host, as curl keeps it on redirects it follows itself.
    var requestHeaders: [(String, String)] {
        // Before any redirect the request goes to the task's own URL: nothing to parse.
        guard requestURL != spec.url, URLParts(requestURL)?.hostKey != spec.hostKey else { return spec.headers }
        return spec.headers.filter { !["authorization", "cookie"].contains($0.0.lowercased()) }
    }
}
