import Testing
@testable import TransferEngine
import TransferVocabulary

/// Response heads as curl's header callback delivers them, and what is read from them.
struct ResponseHeadTests {
    private func collect(_ lines: [String]) -> (status: Int, headers: [(String, String)])? {
        var collector = ResponseCollector()
        for line in lines {
            let result = Array(line.utf8).withUnsafeBytes { collector.consume($0) }
            if case .complete(let status, let headers) = result { return (status, headers) }
        }
        return nil
    }

    @Test func collectsStatusAndTrimmedFieldsOfEachHead() throws {
        let head = try #require(collect(["HTTP/1.1 200 OK\r\n", "Content-Type:  text/plain ;q=1\t\r\n", "ETag:\"v1\"\r\n",
                                         "X-Empty:\r\n", "not a field\r\n", "\r\n"]))
        #expect(head.status == 200)
        #expect(head.headers.map(\.0) == ["Content-Type", "ETag", "X-Empty"])
        #expect(head.headers.map(\.1) == ["text/plain ;q=1", "\"v1\"", ""])
        #expect(collect(["HTTP/2 204\r\n", "\r\n"])?.status == 204)
        // A redirect's head, then the final one: each is reported on its own.
        var collector = ResponseCollector()
        var statuses: [Int] = []
        for line in ["HTTP/1.1 302 Found\r\n", "Location: /x\r\n", "\r\n", "HTTP/1.1 200 OK\r\n", "\r\n"] {
            if case .complete(let status, _) = Array(line.utf8).withUnsafeBytes({ collector.consume($0) }) { statuses.append(status) }
        }
        #expect(statuses == [302, 200])
        #expect(collect(["HTTP/1.1 20x Odd\r\n", "A: b\r\n", "\r\n"])?.status == nil, "no head without a status")
    }

    @Test func findsTheLastFieldOfANameInAnyCase() {
        let head = ResponseHead(status: 200, headers: [("ETAG", "\"a\""), ("Content-Length", "5"), ("etag", "\"b\""),
                                                       ("Content-Type", "Text/HTML; charset=utf-8")],
                                url: "https://example.com/dir/file%20name.txt?x=/y#z")
        #expect(head.header("etag") == "\"b\"")
        #expect(head.header("content-length") == "5")
        #expect(head.header("content-lengt") == nil)
        #expect(head.header("last-modified") == nil)
        #expect(head.expectedContentLength == 5)
        #expect(head.mimeType == "text/html")
        #expect(head.suggestedFilename == "file name.txt")
    }

    @Test func lastPathSegmentByScanningAgreesWithCurlsParse() {
        for url in ["https://example.com/a/b.bin", "http://h:8080/x/y/?q=1", "https://u:p@h/p/f.txt#frag", "https://h",
                    "https://h/", "http://h/a%2Fb", "https://h/dir/?a=/b/c"] {
            #expect(URLParts.lastPathSegment(of: url) == URLParts(url)?.lastPathSegment, "\(url)")
        }
    }
}
