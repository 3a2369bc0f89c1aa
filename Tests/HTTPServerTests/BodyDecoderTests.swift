import Testing
@testable import HTTPServer

/// Decodes `input` split into pieces of `piece` bytes; returns the body and the bytes left over.
func decode(_ framing: BodyFraming, _ input: String, piece: Int = .max) throws -> (body: String, rest: Int, complete: Bool) {
    var decoder = BodyDecoder(framing)
    let bytes = Array(input.utf8)
    var body: [UInt8] = []
    var offset = 0
    while offset < bytes.count && !decoder.isComplete {
        let end = min(bytes.count, offset + piece)
        let consumed = try Array(bytes[offset..<end]).withUnsafeBytes { buffer -> Int in
            try decoder.decode(buffer) { chunk in body.append(contentsOf: chunk) }
        }
        let offered = end - offset
        offset += consumed
        if consumed < offered { break }
    }
    return (String(decoding: body, as: UTF8.self), bytes.count - offset, decoder.isComplete)
}

struct BodyDecoderTests {
    @Test func contentLengthStopsAtTheLength() throws {
        let r = try decode(.length(5), "helloGET /next")
        #expect(r.body == "hello")
        #expect(r.rest == 9)
        #expect(r.complete)
    }

    @Test(arguments: [1, 2, 3, 7, 1000])
    func chunkedInPieces(piece: Int) throws {
        let input = "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\nNEXT"
        let r = try decode(.chunked, input, piece: piece)
        #expect(r.body == "hello, world")
        #expect(r.complete)
        #expect(r.rest == 4)
    }

    @Test func chunkSizesAreHexAndCaseInsensitive() throws {
        let r = try decode(.chunked, "A\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n")
        #expect(r.body == "0123456789abcdefghij")
    }

    static let malformed: [(String, String)] = [
        ("no digits", "\r\nhello\r\n0\r\n\r\n"),
        ("0x prefix", "0x5\r\nhello\r\n0\r\n\r\n"),
        ("negative", "-5\r\nhello\r\n0\r\n\r\n"),
        ("sign", "+5\r\nhello\r\n0\r\n\r\n"),
        ("letter", "5g\r\nhello\r\n0\r\n\r\n"),
        ("overflow", "10000000000000000\r\nx\r\n0\r\n\r\n"),
        ("bare LF after size", "5\nhello\r\n0\r\n\r\n"),
        ("data longer than size", "3\r\nhello\r\n0\r\n\r\n"),
        ("missing CRLF after data", "5\r\nhelloX\r\n0\r\n\r\n"),
        ("bare CR in trailer", "0\r\nX: a\rb\r\n\r\n"),
        ("NUL in extension", "5;a\u{0}\r\nhello\r\n0\r\n\r\n"),
        ("digits after whitespace", "5 5\r\nhello\r\n0\r\n\r\n"),
        ("text after whitespace", "5 x\r\nhello\r\n0\r\n\r\n"),
    ]

    @Test(arguments: malformed)
    func refusesMalformedChunks(_ vector: (String, String)) {
        #expect(throws: HTTPProblem.self, "\(vector.0)") { _ = try decode(.chunked, vector.1) }
    }

    @Test func whitespaceBeforeAnExtensionOrTheLineEnd() throws {
        // RFC 9112 §7.1.1: BWS may precede ";"; what follows whitespace must be an extension.
        #expect(try decode(.chunked, "5 ;a=b\r\nhello\r\n3\t\r\nabc\r\n0 \r\n\r\n").body == "helloabc")
    }

    @Test func emptyLengthIsCompleteAtOnce() {
        #expect(BodyDecoder(.length(0)).isComplete)
    }
}
