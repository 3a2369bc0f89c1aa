import Testing
@testable import JSON

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

    /// 64 levels are allowed, the 65th is refused as too deep (not as malformed), objects and
    /// arrays alike.
    @Test func sixtyFourLevelsAndNoMore() throws {
        let deepest = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try parse(deepest) }
        let objects = String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65)
        for text in ["[" + deepest + "]", objects] {
            let failure = try #require(throws: JSONParser.Failure.self) { try parse(text) }
            #expect(failure.tooDeep)
        }
        let malformed = try #require(throws: JSONParser.Failure.self) { try parse("[1,]") }
        #expect(!malformed.tooDeep)
    }

    /// Up to `maxContainers` objects and arrays parse; one more is refused as too complex.
    @Test func containersBeyondTheLimitAreTooComplex() throws {
        let within = "[" + Array(repeating: "[]", count: JSONParser.maxContainers - 1).joined(separator: ",") + "]"
        #expect(throws: Never.self) { try parse(within) }
        let beyond = "[" + Array(repeating: "{}", count: JSONParser.maxContainers).joined(separator: ",") + "]"
        let failure = try #require(throws: JSONParser.Failure.self) { try parse(beyond) }
        #expect(failure.tooComplex && !failure.tooDeep)
    }

    /// Duplicate names are found whether the object is small (scanned) or large (a set), at any
    /// position, and a large object of distinct names parses whole.
    @Test(arguments: [2, JSONParser.scannedMembers, JSONParser.scannedMembers + 1, 50_000])
    func duplicatesAreFoundInObjectsOfAnySize(count: Int) throws {
        let names = (0..<count).map { "k\($0)" }
        let distinct = "{" + names.map { "\"\($0)\":\($0.count)" }.joined(separator: ",") + "}"
        guard case .object(let members) = try parse(distinct) else { Issue.record("not an object"); return }
        #expect(members.count == count)
        for repeated in [0, count / 2, count - 1] {
            let text = "{" + (names + [names[repeated]]).map { "\"\($0)\":1" }.joined(separator: ",") + "}"
            let failure = try #require(throws: JSONParser.Failure.self) { try parse(text) }
            #expect(failure.message == "duplicate member \"\(names[repeated])\"")
        }
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
