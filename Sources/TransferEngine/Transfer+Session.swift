import Glibc
import TransferVocabulary

/// What a transfer does for its session's configuration while it runs: keeping cookies, and
/// telling refused credentials from a plain 401.
extension Transfer {
    /// Keeps the Set-Cookie fields of every response of the transfer (redirects included) that
    /// the session's policy accepts. curl's own engine carries cookies along the redirects of this
    /// one transfer; the session's jar is what later transfers start from.
    func storeCookies(of head: ResponseHead) {
        let policy = session.settings.cookies
        guard policy.accept != .never, head.headers.contains(where: { $0.0.lowercased() == "set-cookie" }),
              let from = URLParts(head.url), let task = URLParts(spec.url), policy.accepts(from: from.host, taskHost: task.host)
        else { return }
        let now = Int64(time(nil))
        for (name, value) in head.headers where name.lowercased() == "set-cookie" {
            session.jar.store(value, from: from, now: now)
        }
    }

    /// RFC 9110 §15.5.2: a 401 to a request that carried the credentials means they were refused.
    /// curl offers them only on the request's own scheme, host and port, so a 401 from elsewhere
    /// after a redirect is just a response.
    var credentialsRefused: Bool {
        guard credential != nil, let response = finalResponse, response.status == 401 else { return false }
        return URLParts(response.url)?.hostKey == URLParts(requestURL)?.hostKey
    }
}
