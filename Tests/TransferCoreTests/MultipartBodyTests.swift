import Testing
@testable import TransferCore
@testable import TransferModel

/// Regressions found by FuzzMultipart (Tests/fuzz/corpus/FuzzMultipart/crlf-and-combining-quote).
struct MultipartBodyTests {
    func head(_ spec: MultipartSpec) -> String {
        let body = MultipartBody(spec: spec, defaultFilename: "f")
        guard case .bytes(let bytes) = body.wrap(.bytes([]))[0] else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// "\r\n" is one Character in Swift: quoting by Character let it into the part's header.
    @Test func crlfInAFieldNameIsEncoded() {
        let text = head(MultipartSpec(fields: [Header(name: "a\r\nX-Injected: 1", value: "v")]))
        #expect(!text.contains("\r\nX-Injected"))
        #expect(text.contains("name=\"a%0D%0AX-Injected: 1\""))
    }

    /// A quote followed by a combining mark is one Character too; it must still be encoded.
    @Test func quoteWithCombiningMarkIsEncoded() {
        let text = head(MultipartSpec(field: "\"\u{301}", filename: "x\"\u{301}.txt"))
        #expect(text.contains("name=\"%22\u{301}\"; filename=\"x%22\u{301}.txt\""))
    }
}
