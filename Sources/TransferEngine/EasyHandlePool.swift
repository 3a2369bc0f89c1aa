import CCurl

/// Easy handles kept for reuse: `curl_easy_reset` clears every option, and the handle's own
/// allocations are not repeated per transfer. Connections and caches live in the multi handle and
/// the session's share, so reuse loses nothing.
///
/// curl_easy_reset(3) keeps a handle's cookies, and once a handle's cookie engine is on it stays
/// on. So the cookies are erased when such a handle comes back, and it is kept apart: a transfer
/// whose session must not send cookies gets a handle that never had the engine on. Each transfer
/// that uses it adds "" to the handle's list of cookie files (`CURLOPT_COOKIEFILE`), which the
/// reset loses track of without freeing (64 bytes a transfer, for good): a NULL file before the
/// reset frees that list and erases the cookies.
struct EasyHandlePool {
    private var idle: [OpaquePointer] = []
    private var idleWithCookieEngine: [OpaquePointer] = []
    private let limit = 64

    /// Handles waiting for a transfer.
    var count: Int { idle.count + idleWithCookieEngine.count }

    mutating func take(cookieEngine: Bool) -> OpaquePointer {
        if cookieEngine, let easy = idleWithCookieEngine.popLast() { return easy }
        if let easy = idle.popLast() { return easy }
        return OpaquePointer(curl_easy_init()!)
    }

    mutating func give(_ easy: OpaquePointer, cookieEngine: Bool) {
        let h = UnsafeMutableRawPointer(easy)
        guard idle.count + idleWithCookieEngine.count < limit else {
            curl_easy_cleanup(h)
            return
        }
        if cookieEngine { _ = transferd_easy_setopt_ptr(h, CURLOPT_COOKIEFILE, nil) }
        // The reset keeps the handle on its session's share (libcurl resets options, and the
        // share is not one): the share of a session removed meanwhile could not be freed while
        // an idle handle still used it, and leaked (LeakSanitizer found).
        _ = transferd_easy_setopt_ptr(h, CURLOPT_SHARE, nil)
        curl_easy_reset(h)
        if cookieEngine {
            idleWithCookieEngine.append(easy)
        } else {
            idle.append(easy)
        }
    }

    /// Frees the idle handles: their loop is done with them.
    mutating func removeAll() {
        for easy in idle + idleWithCookieEngine { curl_easy_cleanup(UnsafeMutableRawPointer(easy)) }
        idle = []
        idleWithCookieEngine = []
    }
}
