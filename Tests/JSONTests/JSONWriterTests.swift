import Testing
@testable import JSON

struct JSONWriterTests {
    @Test func decimalsMatchTheStandardLibrary() {
        var generator = SystemRandomNumberGenerator()
        let edges: [Int64] = [0, 1, -1, 9, 10, 11, 99, 100, 101, 999_999_999_999_999_999, 1_000_000_000_000_000_000, .max, .min]
        for value in edges + (0..<5000).map({ _ in Int64.random(in: .min ... .max, using: &generator) >> Int64.random(in: 0...63) }) {
            var bytes: [UInt8] = []
            bytes.appendDecimal(value)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
    }

    @Test func writesNumbersKeysAndEscapedStrings() {
        var json = JSONWriter()
        json.beginObject()
        json.key("n"); json.int(-42)
        json.key("big"); json.int(UInt64.max)
        json.key("d"); json.double(2.5)
        json.key("whole"); json.double(3)
        json.key(escaping: "na\"me"); json.string("a\nb")
        json.endObject()
        #expect(String(decoding: json.bytes, as: UTF8.self)
            == #"{"n":-42,"big":18446744073709551615,"d":2.5,"whole":3,"na\"me":"a\nb"}"#)
    }
}
