import Foundation
import Testing
@testable import HTTPServer

/// A temporary file with known contents, removed when the test ends.
final class TempFile: Sendable {
    let path: String
    let contents: [UInt8]

    init(_ contents: [UInt8]) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("httpserver-test-\(UUID().uuidString)").path
        self.contents = contents
        guard FileManager.default.createFile(atPath: path, contents: Data(contents)) else {
            throw ClientError("cannot create \(path)")
        }
    }

    deinit { unlink(path) }

    /// A fresh descriptor for each response: the server closes it when the response is done.
    func open() -> Int32 { Glibc.open(path, O_RDONLY | O_CLOEXEC) }
}

extension Integration {
    /// HEAD, sendfile(2) file bodies, bodyless statuses, and the framing the server owns.
    @Suite struct ResponseBodyTests {
        @Test func headHasTheGetHeadersAndNoBody() throws {
            let body = Array(#"{"hello":"world","n":12345}"#.utf8)
            let server = try TestServer { t in
                t.add("GET", "/doc") { _, r in r.respond(.json(body, headers: HTTPHeaders([("ETag", "\"v1\"")]))) }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/doc"))
            let get = try client.readResponse()
            try client.send(request("HEAD", "/doc"))
            let head = try client.readResponse(isHead: true)
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == String(body.count))
            #expect(head.header("Content-Length") == get.header("Content-Length"))
            #expect(head.header("Content-Type") == "application/json")
            #expect(head.header("ETag") == "\"v1\"")
            // No body followed the HEAD response: the next bytes are the next response's status line.
            try client.send(request("GET", "/doc"))
            let next = try client.readResponse()
            #expect(next.status == 200)
            #expect(next.body == body)
        }

        @Test func fileResponsesDeliverTheExactBytes() throws {
            let file = try TempFile(patternBytes(5 * 1024 * 1024 + 321))
            let server = try TestServer { t in
                t.add("GET", "/file") { _, r in
                    r.respond(HTTPResponse(body: .file(FileRegion(fd: file.open(), offset: 0, count: file.contents.count))))
                }
                t.add("GET", "/range") { _, r in
                    r.respond(HTTPResponse(status: 206, body: .file(FileRegion(fd: file.open(), offset: 1000, count: 70_001))))
                }
            }
            defer { server.shutdown() }
            let client = try server.connect(timeout: 15)
            try client.send(request("GET", "/file"))
            let whole = try client.readResponse()
            #expect(whole.status == 200)
            #expect(whole.header("Content-Length") == String(file.contents.count))
            #expect(whole.body == file.contents)
            try client.send(request("GET", "/range"))
            let part = try client.readResponse()
            #expect(part.status == 206)
            #expect(part.body == Array(file.contents[1000..<71_001]))
            // HEAD on a file route: the length, no bytes, and the connection still in step.
            try client.send(request("HEAD", "/file"))
            #expect(try client.readResponse(isHead: true).header("Content-Length") == String(file.contents.count))
            try client.send(request("GET", "/range"))
            #expect(try client.readResponse().body.count == 70_001)
        }

        @Test func filePartsInterleaveHeadsAndRegionsExactly() throws {
            // Regions of megabytes each: every one takes several sendfile calls and socket stalls.
            let file = try TempFile(patternBytes(6 * 1024 * 1024))
            let regions = [(0, 1), (10, 2 * 1024 * 1024), (3 * 1024 * 1024, 3 * 1024 * 1024)]
            let parts = regions.enumerated().map { i, r in
                FileParts.Part(head: Array("<part \(i)>".utf8), offset: r.0, count: r.1)
            }
            let server = try TestServer { t in
                t.add("GET", "/parts") { _, r in
                    r.respond(HTTPResponse(status: 206, body: .fileParts(FileParts(fd: file.open(), parts: parts, trailer: Array("<end>".utf8)))))
                }
            }
            defer { server.shutdown() }
            let client = try server.connect(timeout: 15)
            var expected: [UInt8] = []
            for (i, r) in regions.enumerated() {
                expected += Array("<part \(i)>".utf8) + Array(file.contents[r.0..<(r.0 + r.1)])
            }
            expected += Array("<end>".utf8)
            for _ in 0..<2 {
                try client.send(request("GET", "/parts"))
                let response = try client.readResponse()
                #expect(response.status == 206)
                #expect(response.header("Content-Length") == String(expected.count))
                #expect(response.body == expected)
            }
            try client.send(request("HEAD", "/parts"))
            #expect(try client.readResponse(isHead: true).header("Content-Length") == String(expected.count))
        }

        @Test func bodylessStatusesCarryNoBody() throws {
            // RFC 9110 §6.4.1: 204 and 304 end at their header section, whatever the handler passed.
            let server = try TestServer { t in
                t.add("GET", "/204") { _, r in r.respond(HTTPResponse(status: 204, body: .bytes(Array("oops".utf8)))) }
                t.add("GET", "/304") { _, r in r.respond(HTTPResponse(status: 304, body: .bytes(Array("stale".utf8)))) }
                t.add("GET", "/204-stream") { _, r in
                    r.respond(HTTPResponse(status: 204, body: .stream { s in s.write(Array("x".utf8)); s.finish() }))
                }
                t.add("GET", "/x") { _, r in r.respond(.text("x")) }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            for path in ["/204", "/304", "/204-stream"] {
                try client.send(request("GET", path) + request("GET", "/x"))
                let bodyless = try client.readResponse()
                #expect(bodyless.status == Int(path.dropFirst().prefix(3)))
                #expect(bodyless.header("Content-Length") == nil && bodyless.header("Transfer-Encoding") == nil,
                        "RFC 9112 §6.1, RFC 9110 §8.6: no framing fields on \(path)")
                let next = try client.readResponse()
                #expect(next.status == 200, "\(path) left no body bytes on the wire")
                #expect(next.text == "x")
            }
        }

        @Test func handlerHeadersCannotBreakTheFraming() throws {
            let server = try TestServer { t in
                t.add("GET", "/h") { _, r in
                    r.respond(HTTPResponse(headers: HTTPHeaders([
                        ("X-Injected", "a\r\nSet-Cookie: evil=1"),
                        ("Bad Name", "v"),
                        ("Content-Length", "999"),
                        ("Transfer-Encoding", "chunked"),
                        ("Connection", "close"),
                        ("X-Fine", "ok"),
                    ]), body: .bytes(Array("body".utf8))))
                }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/h"))
            let response = try client.readResponse()
            #expect(response.text == "body")
            #expect(response.header("Set-Cookie") == nil, "a CR LF in a value does not start a new field")
            #expect(response.header("X-Injected") == nil)
            #expect(response.header("Bad Name") == nil)
            #expect(response.header("X-Fine") == "ok")
            #expect(response.headerValues("Content-Length") == ["4"])
            #expect(response.header("Transfer-Encoding") == nil)
            #expect(!response.closes)
            try client.send(request("GET", "/h"))
            #expect(try client.readResponse().text == "body")
        }

        @Test func aResponseForAClientThatLeftIsDroppedHarmlessly() throws {
            let server = try TestServer { t in
                t.add("GET", "/slow") { _, r in later(0.3) { r.respond(.text("nobody is listening")) } }
                t.add("GET", "/x") { _, r in r.respond(.text("x")) }
            }
            defer { server.shutdown() }
            for _ in 0..<5 {
                let client = try server.connect()
                try client.send(request("GET", "/slow"))
            }
            #expect(eventually { server.server.openConnections == 0 })
            let client = try server.connect()
            try client.send(request("GET", "/x"))
            #expect(try client.readResponse().text == "x")
        }
    }
}
