import CCurl

/// Easy handles kept for reuse: `curl_easy_reset` clears every option, and the handle's own
/// allocations are not repeated per transfer. Connections and caches live in the multi handle and
/// the session's share, so reuse loses nothing.
struct EasyHandlePool {
    private var idle: [OpaquePointer] = []
    private let limit = 64

    mutating func take() -> OpaquePointer {
        if let easy = idle.popLast() { return easy }
        return OpaquePointer(curl_easy_init()!)
    }

    mutating func give(_ easy: OpaquePointer) {
        if idle.count < limit {
            curl_easy_reset(UnsafeMutableRawPointer(easy))
            idle.append(easy)
        } else {
            curl_easy_cleanup(UnsafeMutableRawPointer(easy))
        }
    }
}
