import Synchronization
import Testing
@testable import HTTPServer

extension Integration {
    /// What a guard hands on: the identity the handler sees, headers on every response (the
    /// handler's, the denial, the 500 for a handler that never answered), and the status once sent.
    @Suite struct GuardAdmissionTests {
        final class Caller: Sendable {
            let name: String
            init(name: String) { self.name = name }
        }

        final class Statuses: Sendable {
            let seen = Mutex<[Int]>([])
            func record(_ status: Int) { seen.withLock { $0.append(status) } }
            var all: [Int] { seen.withLock { $0 } }
        }

        static func server(_ statuses: Statuses) throws -> TestServer {
            let check: RequestGuard = { request in
                let completion: @Sendable (Int, String?) -> Void = { status, _ in statuses.record(status) }
                let headers = HTTPHeaders([("X-Caller-Budget", "7")])
                guard let name = request.headers["x-caller"] else {
                    return Admission(denial: .problem(HTTPProblem(401, "unauthorized", "who are you")),
                                     responseHeaders: headers, completion: completion)
                }
                return Admission(identity: Caller(name: name), responseHeaders: headers, completion: completion)
            }
            return try TestServer { t in
                t.add("GET", "/me", guard: check) { request, responder in
                    responder.respond(.text((request.identity as? Caller)?.name ?? "nobody"))
                }
                t.add("GET", "/forgetful", guard: check) { _, _ in }
                t.guardUnmatched(prefix: "/me", check)
            }
        }

        @Test func theHandlerSeesTheIdentityAndEveryResponseCarriesTheHeaders() throws {
            let statuses = Statuses()
            let server = try Self.server(statuses)
            defer { server.shutdown() }
            let client = try server.connect()
            try client.send("GET /me HTTP/1.1\r\nHost: t\r\nX-Caller: billing\r\n\r\n")
            let answered = try client.readResponse()
            #expect(answered.status == 200)
            #expect(answered.text == "billing")
            #expect(answered.header("X-Caller-Budget") == "7")

            try client.send("GET /me HTTP/1.1\r\nHost: t\r\n\r\n")
            let denied = try client.readResponse()
            #expect(denied.status == 401)
            #expect(denied.header("X-Caller-Budget") == "7", "a denial carries them too")

            try client.send("GET /forgetful HTTP/1.1\r\nHost: t\r\nX-Caller: billing\r\n\r\n")
            let forgotten = try client.readResponse()
            #expect(forgotten.status == 500)
            #expect(forgotten.header("X-Caller-Budget") == "7", "so does the answer for a handler that forgot")

            try client.send("GET /me/nothing HTTP/1.1\r\nHost: t\r\nX-Caller: billing\r\n\r\n")
            let unmatched = try client.readResponse()
            #expect(unmatched.status == 404)
            #expect(unmatched.header("X-Caller-Budget") == "7", "and the 404 after an unmatched path's guard")
            #expect(eventually { statuses.all.count == 4 })
            #expect(statuses.all == [200, 401, 500, 404], "the guard hears how each request ended")
        }

        @Test func aRequestItsClientLeftIsReportedOnce() throws {
            let statuses = Statuses()
            let gate = Mutex<Responder?>(nil)
            let server = try TestServer { t in
                t.add("GET", "/slow", guard: { _ in Admission(completion: { status, _ in statuses.record(status) }) }) { _, responder in
                    gate.withLock { $0 = responder }
                }
            }
            defer { server.shutdown() }
            do {
                let client = try server.connect()
                try client.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(eventually { gate.withLock { $0 != nil } })
            }  // the client closes its socket here, unanswered
            gate.withLock { $0?.respond(HTTPResponse(status: 204)); $0 = nil }
            #expect(eventually { statuses.all == [204] })
            #expect(!eventually(within: 0.2) { statuses.all.count > 1 }, "reported once, though the write failed")
        }
    }
}
