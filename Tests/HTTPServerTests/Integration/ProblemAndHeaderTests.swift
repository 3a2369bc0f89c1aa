import Testing
@testable import HTTPServer

extension Integration {
    /// Problem documents (RFC 9457), `Allow`, `X-Request-Id`, `Date`, and answers for handlers that forget.
    @Suite struct ProblemAndHeaderTests {
        static func server() throws -> TestServer {
            try TestServer { t in
                t.add("GET", "/things/{id}") { req, r in r.respond(.text(req.parameters["id"] ?? "")) }
                t.add("PUT", "/things/{id}") { _, r in r.respond(HTTPResponse(status: 204)) }
                t.add("GET", "/id") { req, r in r.respond(.text(req.id)) }
                t.add("GET", "/forgetful") { _, _ in }  // drops the Responder without answering
                t.add("GET", "/forgetful-later") { _, responder in later(0.05) { _ = responder } }
                t.add("PUT", "/forgetful-sink", .streamed { _ throws(HTTPProblem) in ForgetfulSink() })
            }
        }

        static func expectProblem(_ response: RawResponse, status: Int, code: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) throws
        {
            #expect(response.status == status, sourceLocation: sourceLocation)
            #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
            let doc = try jsonObject(response.body)
            #expect(Set(doc.keys) == ["type", "title", "status", "detail", "code", "errors", "instance"], sourceLocation: sourceLocation)
            // The server's own problems name no field; every problem names the request it answers.
            #expect((doc["errors"] as? [Any])?.isEmpty == true, sourceLocation: sourceLocation)
            #expect(doc["instance"] as? String == response.header("X-Request-Id"), sourceLocation: sourceLocation)
            #expect(doc["status"] as? Int == status, sourceLocation: sourceLocation)
            #expect(doc["code"] as? String == code, sourceLocation: sourceLocation)
            #expect(doc["title"] as? String == HTTPStatus.reason(status), sourceLocation: sourceLocation)
            #expect((doc["type"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
            #expect((doc["detail"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
        }

        @Test func unknownPathIs404Problem() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/nowhere"))
            let response = try client.readResponse()
            try Self.expectProblem(response, status: 404, code: "not_found")
            #expect(!response.closes, "a 404 does not cost the connection")
            try client.send(request("GET", "/things/a"))
            #expect(try client.readResponse().text == "a")
        }

        @Test func wrongMethodIs405ProblemWithAllow() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("DELETE", "/things/a"))
            let response = try client.readResponse()
            try Self.expectProblem(response, status: 405, code: "method_not_allowed")
            let allow = Set((response.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: " ") })
            #expect(allow == ["GET", "HEAD", "PUT"])
        }

        @Test func a405WithABodyClosesAfterAnswering() throws {
            // The body was never read, so the connection cannot carry another request.
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("POST", "/things/a", body: "unread"))
            let response = try client.readResponse()
            try Self.expectProblem(response, status: 405, code: "method_not_allowed")
            #expect(response.closes)
            #expect(client.waitForClose())
        }

        @Test func requestIDIsEchoedWhenValid() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/id", headers: ["X-Request-Id: client-id_1.2~x:y"]))
            let response = try client.readResponse()
            #expect(response.header("X-Request-Id") == "client-id_1.2~x:y")
            #expect(response.text == "client-id_1.2~x:y", "the handler sees the same id")
            // Also on responses the server makes itself.
            try client.send(request("GET", "/nowhere", headers: ["X-Request-Id: abc-404"]))
            #expect(try client.readResponse().header("X-Request-Id") == "abc-404")
        }

        @Test(arguments: ["", "has space", "semi;colon", "quote\"d", String(repeating: "a", count: 129)])
        func requestIDIsGeneratedWhenMissingOrInvalid(given: String) throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send(request("GET", "/id", headers: given.isEmpty ? [] : ["X-Request-Id: \(given)"]))
            let first = try client.readResponse()
            try client.send(request("GET", "/id"))
            let second = try client.readResponse()
            let id1 = try #require(first.header("X-Request-Id"))
            let id2 = try #require(second.header("X-Request-Id"))
            #expect(!id1.isEmpty && id1 != given)
            #expect(id1 == first.text)
            #expect(id1 != id2, "generated ids are unique")
        }

        @Test func everyResponseHasADate() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            for (req, isHead) in [(request("GET", "/things/a"), false), (request("PUT", "/things/a"), false),
                                  (request("HEAD", "/things/a"), true), (request("GET", "/nowhere"), false),
                                  (request("PATCH", "/things/a"), false), (request("GET", "/forgetful"), false)]
            {
                try client.send(req)
                let response = try client.readResponse(isHead: isHead)
                #expect(isIMFFixdate(response.header("Date")), "\(req)")
                #expect(response.headerValues("Date").count == 1)
            }
            let refused = try server.connect()
            try refused.send("GET /x HTTP/1.1\r\n\r\n")
            #expect(isIMFFixdate(try refused.readResponse().header("Date")))
        }

        @Test func aHandlerThatNeverRespondsStillYields500() throws {
            let server = try Self.server()
            defer { server.shutdown() }
            let client = try server.connect()
            for path in ["/forgetful", "/forgetful-later"] {
                try client.send(request("GET", path))
                let response = try client.readResponse()
                try Self.expectProblem(response, status: 500, code: "internal_error")
            }
            try client.send("PUT /forgetful-sink HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc")
            try Self.expectProblem(try client.readResponse(), status: 500, code: "internal_error")
            // The connection is still in step.
            try client.send(request("GET", "/things/b"))
            #expect(try client.readResponse().text == "b")
        }
    }
}

/// A sink whose `finish` drops the responder.
final class ForgetfulSink: RequestBodySink {
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPProblem) {}
    func finish(_ responder: Responder) {}
    func abort() {}
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop(while: { $0 == set }).reversed().drop(while: { $0 == set }).reversed())
    }
}
