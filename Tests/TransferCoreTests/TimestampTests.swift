import Glibc
import Testing
@testable import TransferModel

struct TimestampTests {
    @Test func formatsAndParsesRFC3339() {
        let t = Timestamp(milliseconds: 1_795_000_000_123)
        #expect(t.rfc3339 == "2026-11-18T11:06:40.123Z")
        #expect(Timestamp(rfc3339: t.rfc3339) == t)
        #expect(Timestamp(rfc3339: "2026-11-18T13:06:40.123+02:00") == t)
        #expect(Timestamp(rfc3339: "2026-11-18T11:06:40Z")?.milliseconds == 1_795_000_000_000)
    }

    /// The arithmetic formatter agrees with the C library's calendar, leap days, the epoch, times
    /// before it and the last representable year included.
    @Test func formatsLikeGmtime() {
        var generator = SystemRandomNumberGenerator()
        let samples: [Int64] = [0, -1, 86_399_999, 86_400_000, -86_400_001, 951_782_400_000, 4_107_542_399_999,
                                253_402_300_799_999, -62_135_596_800_000]
            + (0..<2000).map { _ in Int64.random(in: -62_135_596_800_000...253_402_300_799_999, using: &generator) }
        for ms in samples {
            var seconds = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            func pad(_ v: Int32, _ width: Int) -> String {
                String(repeating: "0", count: max(0, width - String(v).count)) + String(v)
            }
            let expected = "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
                + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(ms - Int64(seconds) * 1000), 3))Z"
            #expect(Timestamp(milliseconds: ms).rfc3339 == expected, "\(ms)")
        }
    }

    @Test(arguments: ["", "2026-11-18", "2026-13-01T00:00:00Z", "2026-11-18T08:26:40", "2026-11-18T25:00:00Z", "yesterday",
                      "2026-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-02-00T00:00:00Z"])
    func refusesMalformed(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test(arguments: ["2028-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "2026-12-31T23:59:59Z", "2026-04-30T00:00:00Z"])
    func acceptsTheLastDayOfEachMonth(_ text: String) {
        #expect(Timestamp(rfc3339: text)?.rfc3339.hasPrefix(String(text.prefix(19))) == true)
    }
}
