import CPSL

/// The Public Suffix List through libpsl, the library Debian's libcurl links for the same check:
/// the system's list (`/usr/share/publicsuffix`, package `publicsuffix`) when it is newer than
/// the copy built into libpsl, else that copy.
enum PublicSuffixList {
    /// Loaded once; libpsl's lookups only read it, from any thread.
    nonisolated(unsafe) private static let context: OpaquePointer? = psl_latest(nil) ?? psl_builtin()

    /// RFC 6265 §5.3 step 5: a cookie whose Domain is a public suffix (`co.uk`, `github.io`) is
    /// refused unless it is the request's host itself (then it is host-only). Both names
    /// lower-case; a host that is an IP address accepts only itself.
    static func acceptsCookieDomain(_ domain: String, from host: String) -> Bool {
        if domain == host { return true }
        guard let context else { return domain.contains(".") }
        return psl_is_cookie_domain_acceptable(context, host, domain) != 0
    }
}

extension PublicSuffixList {
    /// `co.uk`, `github.io`, `com` — and, by the list's default rule, any unknown top-level name.
    static func isPublicSuffix(_ domain: String) -> Bool {
        guard let context else { return !domain.contains(".") }
        return psl_is_public_suffix(context, domain) != 0
    }
}
