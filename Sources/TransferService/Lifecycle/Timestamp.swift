import Glibc

/// Wall-clock time in milliseconds since the Unix epoch, with RFC 3339 formatting and parsing:
/// the form every timestamp in the API takes.
public struct Timestamp: Sendable, Comparable, Hashable {
    public let milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(milliseconds: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    public var seconds: Double { Double(milliseconds) / 1000 }

    public func adding(seconds: Double) -> Timestamp {
        Timestamp(milliseconds: milliseconds + Int64((seconds * 1000).rounded()))
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.milliseconds < b.milliseconds }

    /// `2026-11-22T06:08:24.123Z`
    public var rfc3339: String {
        var t = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        let ms = Int(milliseconds - Int64(t) * 1000)
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(ms), 3))Z"
    }

    /// Parses RFC 3339 date-times: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= b.count else { return nil }
            var v = 0
            for c in b[from..<from + count] {
                guard c >= 0x30 && c <= 0x39 else { return nil }
                v = v * 10 + Int(c - 0x30)
            }
            return v
        }
        guard b.count >= 20, let year = num(0, 4), b[4] == 0x2D, let month = num(5, 2), b[7] == 0x2D,
              let day = num(8, 2), b[10] == 0x54 || b[10] == 0x74 || b[10] == 0x20, let hour = num(11, 2), b[13] == 0x3A,
              let minute = num(14, 2), b[16] == 0x3A, let second = num(17, 2),
              (1...12).contains(month), (1...Timestamp.days(inMonth: month, of: year)).contains(day),
              hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        var millis = 0
        if i < b.count && b[i] == 0x2E {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 {
                if digits < 3 { millis = millis * 10 + Int(b[i] - 0x30) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 { for _ in digits..<3 { millis *= 10 } }
        }
        guard i < b.count else { return nil }
        var offset = 0
        if b[i] == 0x5A || b[i] == 0x7A {
            guard i + 1 == b.count else { return nil }
        } else if b[i] == 0x2B || b[i] == 0x2D {
            guard i + 6 == b.count, let oh = num(i + 1, 2), b[i + 3] == 0x3A, let om = num(i + 4, 2), oh < 24, om < 60 else { return nil }
            offset = (oh * 60 + om) * 60 * (b[i] == 0x2B ? 1 : -1)
        } else {
            return nil
        }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(min(second, 59))
        let epoch = timegm(&parts)
        milliseconds = (Int64(epoch) - Int64(offset)) * 1000 + Int64(millis)
    }

    /// Days in `month` (1–12) of the proleptic Gregorian `year` (RFC 3339 §5.7).
    static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
