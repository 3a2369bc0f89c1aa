import Testing
@testable import HTTPServer

extension Integration {
    /// `.stream` responses: chunked coding on HTTP/1.1, close-delimited on HTTP/1.0, and how a
    /// stream ends (finished, client gone, paused longer than a timeout).
    @Suite struct StreamResponseTests {
        @Test func streamResponsesAreValidChunkedEncoding() throws {
            let pieces = (0..<50).map { patternBytes($0 * 997 + 1, seed: UInt64($0 + 7)) }
            let server = try TestServer { t in
                t.add("GET", "/events") { _, r in
                    r.respond(HTTPResponse(headers: HTTPHeaders([("Content-Type", "text/event-stream")]), body: .stream { stream in
                        // Written from another thread, as the event log would.
                        later(0.01) {
                            for piece in pieces { stream.write(piece) }
                            stream.finish()
                        }
                    }))
                }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/events"))
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.header("Transfer-Encoding") == "chunked")
            #expect(response.header("Content-Length") == nil)
            #expect(response.sawLastChunk)
            #expect(response.chunkSizes == pieces.map(\.count), "each write is one chunk")
            #expect(response.body == pieces.flatMap { $0 })
            // The terminating chunk ended the response; the connection carries the next one.
            try client.send(request("GET", "/events"))
            #expect(try client.readResponse().sawLastChunk)
        }

        @Test func aStreamMayPauseLongerThanTheWriteTimeout() throws {
            // The write timeout is for a client that does not read; a stream that has sent
            // everything and waits for its next event (Server-Sent Events) is not stalled.
            let server = try TestServer(configure: { $0.writeTimeout = 0.5 }) { t in
                t.add("GET", "/slow") { _, r in
                    r.respond(HTTPResponse(body: .stream { stream in
                        stream.write(Array("first".utf8))
                        later(1.6) {
                            stream.write(Array("second".utf8))
                            stream.finish()
                        }
                    }))
                }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/slow"))
            let response = try client.readResponse()
            #expect(response.sawLastChunk)
            #expect(response.text == "firstsecond")
        }

        @Test func streamTerminationIsReportedWhenTheClientLeaves() throws {
            let terminated = AbortFlag()
            let server = try TestServer { t in
                t.add("GET", "/events") { _, r in
                    r.respond(HTTPResponse(body: .stream { stream in
                        stream.onTermination { terminated.value.store(true, ordering: .releasing) }
                        stream.write(Array("hello".utf8))
                    }))
                }
            }
            defer { server.shutdown() }
            do {
                let client = try server.connect()
                try client.send(request("GET", "/events"))
                let head = try client.readHead()
                #expect(head.header("Transfer-Encoding") == "chunked")
                _ = try client.readExactly(10)  // "5\r\nhello\r\n"
            }
            #expect(eventually { terminated.value.load(ordering: .acquiring) })
        }

        @Test func headOnAStreamRouteSendsNoChunks() throws {
            let server = try TestServer { t in
                t.add("GET", "/events") { _, r in
                    r.respond(HTTPResponse(body: .stream { stream in stream.write([1]); stream.finish() }))
                }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("HEAD", "/events"))
            let head = try client.readResponse(isHead: true)
            #expect(head.status == 200)
            try client.send(request("GET", "/events"))
            let get = try client.readResponse()
            #expect(get.status == 200, "no chunk of the HEAD response was left on the wire")
            #expect(get.body == [1])
        }

        @Test func aStreamForAClientThatAlreadyLeftIsTerminated() throws {
            let terminated = AbortFlag()
            let server = try TestServer { t in
                t.add("GET", "/events") { _, r in
                    later(0.3) {
                        r.respond(HTTPResponse(body: .stream { stream in
                            stream.onTermination { terminated.value.store(true, ordering: .releasing) }
                        }))
                    }
                }
            }
            defer { server.shutdown() }
            do {
                let client = try server.connect()
                try client.send(request("GET", "/events"))
            }
            #expect(eventually { terminated.value.load(ordering: .acquiring) })
            #expect(eventually { server.server.openConnections == 0 })
        }

        @Test func http10StreamIsDelimitedByClose() throws {
            let server = try TestServer { t in
                t.add("GET", "/events") { _, r in
                    r.respond(HTTPResponse(body: .stream { stream in
                        later(0.01) {
                            stream.write(Array("one,".utf8))
                            stream.write(Array("two".utf8))
                            stream.finish()
                        }
                    }))
                }
            }
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("GET /events HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.version == "HTTP/1.0")
            #expect(response.header("Transfer-Encoding") == nil, "HTTP/1.0 has no chunked coding")
            #expect(response.closes)
            #expect(response.closeDelimited)
            #expect(response.text == "one,two")
        }
    }
}
