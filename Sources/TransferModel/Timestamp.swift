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

    /// `2026-11-22T06:08:24.123Z`. Every task object carries a few of these, so the digits are
    /// computed (days to a civil date, as in Howard Hinnant's `civil_from_days`) and written
    /// straight into bytes: `gmtime_r` takes glibc's time-zone lock, and padding each field as a
    /// string cost more than encoding the rest of a new task.
    public var rfc3339: String {
        let (days, msOfDay) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        let day = msOfDay < 0 ? days - 1 : days, ms = msOfDay < 0 ? msOfDay + 86_400_000 : msOfDay
        let (year, month, dayOfMonth) = Timestamp.civil(fromDays: day)
        var out: [UInt8] = []
        out.reserveCapacity(24)
        func digits(_ value: Int64, _ width: Int) {
            var divisor: Int64 = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor > 0 {
                out.append(0x30 + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        if (0...9999).contains(year) { digits(year, 4) } else { out.append(contentsOf: String(year).utf8) }
        out.append(0x2D); digits(month, 2); out.append(0x2D); digits(dayOfMonth, 2)
        out.append(0x54); digits(ms / 3_600_000, 2); out.append(0x3A); digits(ms / 60_000 % 60, 2)
        out.append(0x3A); digits(ms / 1000 % 60, 2); out.append(0x2E); digits(ms % 1000, 3); out.append(0x5A)
        return String(decoding: out, as: UTF8.self)
    }

    /// The proleptic Gregorian (year, month, day) of a day counted from 1970-01-01.
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
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
