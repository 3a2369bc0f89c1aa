import TransferVocabulary

/// Which of a session's credentials a URL gets: asked at the start of a transfer and again at
/// every redirect.
extension Credential {
    func applies(to url: URLParts) -> Bool {
        guard url.host == host, port.map({ $0 == url.port }) ?? true else { return false }
        return pathPrefix.map { CookieJar.pathMatches(url.path, $0) } ?? true
    }

    /// The credential for `url`: the most specific that applies (a port beats none, then the
    /// longest path prefix).
    static func best(for url: URLParts, in credentials: [Credential]) -> Credential? {
        credentials.filter { $0.applies(to: url) }.max { a, b in
            (a.port == nil ? 0 : 1, a.pathPrefix?.count ?? -1) < (b.port == nil ? 0 : 1, b.pathPrefix?.count ?? -1)
        }
    }
}
