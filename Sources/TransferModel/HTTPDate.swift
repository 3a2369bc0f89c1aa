import Glibc

/// HTTP-date (RFC 9110 §5.6.7), as `Retry-After` and `If-Modified-Since` may carry it. Only
/// IMF-fixdate is read: `Sun, 06 Nov 1994 08:49:37 GMT`; the obsolete forms are refused.
package enum HTTPDate {
    /// IMF-fixdate of a time in whole seconds since the epoch.
    package static func format(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        var buffer = [CChar](repeating: 0, count: 40)
        let n = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    package static func parse(_ text: String) -> Timestamp? {
        // "Sun," "06" "Nov" "1994" "08:49:37" "GMT"
        let fields = text.trimmingCharacters().split(separator: " ")
        guard fields.count == 6, fields[0].count == 4, fields[0].hasSuffix(","), fields[5] == "GMT",
              let day = Int(fields[1]), let month = months.firstIndex(of: String(fields[2])), let year = Int(fields[3])
        else { return nil }
        let clock = fields[4].split(separator: ":")
        guard clock.count == 3, let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
              (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(min(second, 59))
        return Timestamp(milliseconds: Int64(timegm(&parts)) * 1000)
    }
}
