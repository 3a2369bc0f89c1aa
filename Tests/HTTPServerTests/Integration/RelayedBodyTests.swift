import Testing
@testable import HTTPServer

extension Integration {
    /// What a relay of another server's answer needs: a streamed body of known length, writes
    /// paced by the client (`whenSent`), a stream that ends by closing when it cannot complete,
    /// and a problem document that already names its instance kept as it is.
    @Suite struct RelayedBodyTests {
        static let pieces = (0..<40).map { patternBytes(4093 + $0 * 131, seed: UInt64($0 + 3)) }
        static var whole: [UInt8] { pieces.flatMap { $0 } }

        /// Writes `pieces` one after another, each once the one before went to the socket.
        static func paced(_ stream: ResponseStream, from index: Int = 0) {
            guard index < pieces.count else { return stream.finish() }
            stream.write(pieces[index]) { paced(stream, from: index + 1) }
        }

        static func server() throws -> TestServer {
            try TestServer { t in
                t.add("GET", "/paced") { _, r in
                    r.respond(HTTPResponse(body: .streamOfLength(whole.count) { stream in later(0.01) { paced(stream) } }))
                }
                t.add("GET", "/short") { _, r in
                    r.respond(HTTPResponse(body: .streamOfLength(whole.count + 1) { stream in paced(stream) }))
                }
                t.add("GET", "/long") { _, r in
                    r.respond(HTTPResponse(body: .streamOfLength(10) { stream in
                        stream.write(Array("0123456789".utf8))
                        stream.write(Array("more".utf8))
                        stream.finish()
                    }))
                }
                t.add("GET", "/aborted") { _, r in
                    r.respond(HTTPResponse(body: .stream { stream in
                        stream.write(Array("part".utf8))
                        stream.abort()
                    }))
                }
                t.add("GET", "/relayed-problem") { _, r in
                    var response = HTTPResponse.problem(HTTPProblem(409, "conflict", "elsewhere"))
                    response.body = .bytes(Array(#"{"code":"conflict","instance":"from-the-holder"}"#.utf8))
                    r.respond(response)
                }
            }
        }

        @Test func aBodyOfKnownLengthIsSentWithItsLengthAsItIsWritten() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/paced"))
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == String(Self.whole.count))
            #expect(response.header("Transfer-Encoding") == nil)
            #expect(response.body == Self.whole, "every piece, each written once the one before was sent")
            // Framed by its length, the response leaves the connection ready for the next.
            try client.send(request("HEAD", "/paced"))
            let head = try client.readResponse(isHead: true)
            #expect(head.header("Content-Length") == String(Self.whole.count))
            try client.send(request("GET", "/paced"))
            #expect(try client.readResponse().body == Self.whole)
        }

        @Test func writingPastTheLengthEndsTheConnectionAtTheLength() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/long"))
            #expect(try client.readHead().header("Content-Length") == "10")
            #expect(client.waitForClose())
            #expect(client.pending == Array("0123456789".utf8), "nothing past the length, where the next response would be read")
        }

        @Test(arguments: ["/short", "/aborted"])
        func aBodyThatCannotCompleteEndsTheConnection(path: String) throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", path))
            let head = try client.readHead()
            #expect(head.status == 200)
            #expect(client.waitForClose(), "the client must not take what it got for the whole body")
            if let length = head.header("Content-Length").flatMap({ Int($0) }) {
                #expect(client.pending.count != length)
            } else {
                #expect(!client.pending.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8)), "no last chunk")
            }
        }

        @Test func aProblemThatNamesItsInstanceKeepsIt() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/relayed-problem"))
            let response = try client.readResponse()
            #expect(response.text == #"{"code":"conflict","instance":"from-the-holder"}"#)
        }
    }
}
