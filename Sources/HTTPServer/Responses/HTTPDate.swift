import Glibc

/// IMF-fixdate for the `Date` header (RFC 9110 §5.6.7), formatted at most once a second per loop.
struct HTTPDateCache {
    private var second: time_t = 0
    private(set) var value: [UInt8] = []

    mutating func current() -> [UInt8] {
        let now = time(nil)
        if now != second {
            second = now
            value = Array(HTTPDateCache.format(now).utf8)
        }
        return value
    }

    static func format(_ t: time_t) -> String {
        var t = t
        var parts = tm()
        gmtime_r(&t, &parts)
        var buffer = [CChar](repeating: 0, count: 40)
        let n = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
