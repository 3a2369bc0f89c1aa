import Glibc
import Testing
@testable import TransferService

struct JSONParserTests {
    func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }

    @Test func parsesEveryKindOfValue() throws {
        let v = try parse(#" {"a": [1, -2.5e3, true, false, null], "b": {"c": "d\n\u00e9\ud83d\ude00"}} "#)
        #expect(v["a"] == .array([.number(1), .number(-2500), .bool(true), .bool(false), .null]))
        #expect(v["b"]?["c"] == .string("d\né😀"))
    }

    @Test func keepsMemberOrder() throws {
        guard case .object(let members) = try parse(#"{"z":1,"a":2,"m":3}"#) else { Issue.record("not an object"); return }
        #expect(members.map(\.0) == ["z", "a", "m"])
    }

    static let invalid = [
        "", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "+1", "NaN", "Infinity", "'x'", "[1 2]",
        "{\"a\" 1}", "\"unterminated", "\"bad \\x escape\"", "\"lone \\ud800 surrogate\"", "\"\u{1}\"",
        "tru", "nul", "{\"a\":1}{", "{\"a\":1,\"a\":2}", "1e999",
    ]

    @Test(arguments: invalid)
    func refusesInvalidJSON(_ text: String) {
        #expect(throws: JSONParser.Failure.self) { try parse(text) }
    }

    @Test func refusesDeepNesting() {
        #expect(throws: JSONParser.Failure.self) { try parse(String(repeating: "[", count: 100) + String(repeating: "]", count: 100)) }
        #expect(throws: Never.self) { try parse(String(repeating: "[", count: 60) + String(repeating: "]", count: 60)) }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
    }

    @Test func integersAreRecognised() throws {
        #expect(try parse("42").intValue == 42)
        #expect(try parse("4.5").intValue == nil)
    }
}

struct Base64Tests {
    @Test(arguments: ["", "f", "fo", "foo", "foob", "fooba", "foobar"])
    func roundTrips(_ text: String) {
        let encoded = Base64.encode(Array(text.utf8))
        #expect(Base64.decode(encoded) == Array(text.utf8))
    }

    @Test func knownVectors() {
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
    }

    @Test(arguments: ["Zm8", "Zm9v!", "Zm 9v", "Z===", "====", "Zm9=vYmFy"])
    func refusesMalformed(_ text: String) {
        #expect(Base64.decode(text) == nil)
    }
}

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
