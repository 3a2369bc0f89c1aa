import Glibc
import TransferVocabulary

/// A cookie as the jar judges it and as curl reads it.
extension Cookie {
    func isExpired(at now: Int64) -> Bool { expires.map { $0 <= now } ?? false }

    /// The cookie as a line of curl's cookie file (Netscape's format: domain, whether subdomains
    /// match, path, secure, expiry with 0 for a session cookie, name, value; `#HttpOnly_` before
    /// the domain), for `CURLOPT_COOKIELIST`. The jar refuses tabs and newlines, so fields stay apart.
    var curlLine: String {
        let fields = [(httpOnly ? "#HttpOnly_" : "") + (hostOnly ? domain : "." + domain), hostOnly ? "FALSE" : "TRUE", path,
                      secure ? "TRUE" : "FALSE", String(expires ?? 0), name, value]
        return fields.joined(separator: "\t")
    }
}

extension CookiePolicy {
    /// Whether a Set-Cookie of a response from `responseHost` is kept, for a task whose URL has
    /// `taskHost`: `same_domain` keeps only what the task's own host sets (URLSession's
    /// `onlyFromMainDocumentDomain`), not what a redirect target sets.
    func accepts(from responseHost: String, taskHost: String) -> Bool {
        switch accept {
        case .always: true
        case .never: false
        case .sameDomain: responseHost == taskHost
        }
    }
}

/// A session's cookies: stored from Set-Cookie (RFC 6265 §5.2–5.3), handed to curl's cookie engine
/// for each transfer, listed and persisted. Small by nature (bounded), so changes are scans.
struct CookieJar {
    private(set) var cookies: [Cookie] = []
    /// Set when the jar changed since `takeChanged` last looked.
    private(set) var changed = false
    static let maxCookies = 3000
    /// RFC 6265 §6.1: at least 4096 bytes per cookie (name, value and attributes).
    static let maxCookieBytes = 4096

    init(cookies: [Cookie] = []) {
        self.cookies = Array(cookies.suffix(CookieJar.maxCookies))
    }

    /// Forgets every cookie (`POST …/reset`).
    mutating func removeAll() {
        if !cookies.isEmpty { changed = true }
        cookies.removeAll()
    }

    mutating func takeChanged() -> Bool {
        defer { changed = false }
        return changed
    }

    /// Stores a Set-Cookie received from `url`; ignores what RFC 6265 says a user agent must ignore
    /// (no name, a Domain the host is not in or that is a public suffix, a Secure cookie over http, control characters, too
    /// large). A cookie that arrives expired deletes the one it names.
    mutating func store(_ header: String, from url: URLParts, now: Int64) {
        guard header.utf8.count <= CookieJar.maxCookieBytes,
              !header.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return }
        var parts = header.split(separator: ";", omittingEmptySubsequences: false).map { String($0).trimmed() }
        guard let eq = parts[0].firstIndex(of: "=") else { return }
        let name = String(parts[0][..<eq]).trimmed()
        let value = String(parts[0][parts[0].index(after: eq)...]).trimmed()
        guard !name.isEmpty else { return }
        parts.removeFirst()
        var cookie = Cookie(name: name, value: value, domain: url.host, hostOnly: true, path: CookieJar.defaultPath(url.path),
                            secure: false, httpOnly: false, expires: nil)
        var maxAge: Int64?
        for attribute in parts where !attribute.isEmpty {
            let kv = attribute.split(separator: "=", maxSplits: 1).map { String($0).trimmed() }
            let key = kv[0].lowercased(), val = kv.count > 1 ? kv[1] : ""
            switch key {
            case "expires": if let t = CookieJar.parseDate(val) { cookie.expires = t }
            case "max-age": if let n = Int64(val) { maxAge = n }
            case "domain":
                var domain = val.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                // The host must be in the domain, and the domain must not be a public suffix
                // (`com`, `co.uk`, `github.io`): RFC 6265 §5.3 steps 5–6.
                guard CookieJar.domainMatches(url.host, domain), PublicSuffixList.acceptsCookieDomain(domain, from: url.host) else { return }
                // A public suffix that is the host itself makes a host-only cookie (step 5).
                guard domain != url.host || !PublicSuffixList.isPublicSuffix(domain) else { continue }
                cookie.domain = domain
                cookie.hostOnly = false
            case "path": if val.hasPrefix("/") { cookie.path = val }
            case "secure": cookie.secure = true
            case "httponly": cookie.httpOnly = true
            default: break
            }
        }
        // Max-Age wins over Expires (§5.3 step 3).
        if let maxAge { cookie.expires = maxAge <= 0 ? 0 : now + maxAge }
        if cookie.secure && url.scheme != "https" { return }
        let old = cookies.firstIndex { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }
        if cookie.isExpired(at: now) {
            guard let old else { return }
            cookies.remove(at: old)
        } else if let old {
            guard cookies[old] != cookie else { return }
            cookies[old] = cookie
        } else {
            cookies.append(cookie)
            if cookies.count > CookieJar.maxCookies { cookies.removeFirst(cookies.count - CookieJar.maxCookies) }
        }
        changed = true
    }

    /// The cookies that have not expired, dropping the others.
    mutating func live(now: Int64) -> [Cookie] {
        let before = cookies.count
        cookies.removeAll { $0.isExpired(at: now) }
        if cookies.count != before { changed = true }
        return cookies
    }

    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        if host == domain { return true }
        // A name, not an IP address, ending in ".domain".
        return host.hasSuffix("." + domain) && IPAddress(host) == nil
    }

    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).hasPrefix("/")
    }

    /// RFC 6265 §5.1.4: the request path up to its last `/`, or `/`.
    static func defaultPath(_ path: String) -> String {
        guard path.hasPrefix("/"), let last = path.lastIndex(of: "/"), last != path.startIndex else { return "/" }
        return String(path[..<last])
    }

    /// Expires values as servers send them: IMF-fixdate, RFC 850 or asctime (a loose reading of
    /// RFC 6265 §5.1.1: day, month name, year and time found in any order).
    static func parseDate(_ text: String) -> Int64? {
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        var day: Int?, month: Int?, year: Int?, time: (Int, Int, Int)?
        for token in text.split(whereSeparator: { " ,-\t".contains($0) }) {
            let t = String(token)
            if time == nil, t.contains(":") {
                let hms = t.split(separator: ":").compactMap { Int($0) }
                if hms.count == 3 { time = (hms[0], hms[1], hms[2]) }
            } else if month == nil, let m = months.firstIndex(of: String(t.prefix(3)).lowercased()), Int(t) == nil {
                month = m
            } else if let n = Int(t) {
                if day == nil && t.count <= 2 { day = n } else if year == nil { year = n < 70 ? 2000 + n : (n < 100 ? 1900 + n : n) }
            }
        }
        guard let day, let month, let year, let time, (1...31).contains(day), year >= 1601 else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(time.0)
        parts.tm_min = Int32(time.1)
        parts.tm_sec = Int32(time.2)
        return Int64(timegm(&parts))
    }
}
