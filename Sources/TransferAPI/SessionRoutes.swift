import HTTPServer
import JSON
import Lifecycles
import TransferCore
import TransferModel

/// `/v1/sessions…`: create or re-attach, change in part (PATCH), read, list (the sessions the caller
/// may see), invalidate, reset, flush. Replies carry the session's entity tag; changes honour `If-Match`.
struct SessionRoutes {
    let coordinator: TaskCoordinator

    func register(in table: inout APIRouteTable) {
        let coordinator = coordinator
        table.add("PUT", "/v1/sessions/{identifier}", .sessionCreation) { request, principal, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                let identifier = try RouteSupport.identifier(request)
                let existing = try? coordinator.session(identifier)
                let body = try RouteSupport.jsonBody(request, required: false) ?? .object([])
                let put = try SessionBody.put(body, existing: existing, principal: principal)
                try EntityTag.checkIfMatch(request) { existing.map(SessionRoutes.representation) }
                SessionRoutes.put(identifier, put, coordinator, responder)
            }
        }
        table.add("PATCH", "/v1/sessions/{identifier}", .session) { request, principal, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                guard session.locked({ session.lifecycle.status == .active }) else {
                    throw Refusal(.conflict, SessionLifecycle.Refusal.sessionInvalidated.rawValue,
                                  "session \(session.identifier) is invalidated or being invalidated: it cannot be changed")
                }
                let put = try SessionBody.patch(try RouteSupport.jsonBody(request)!, of: session, principal: principal)
                try EntityTag.checkIfMatch(request) { SessionRoutes.representation(session) }
                SessionRoutes.put(session.identifier, put, coordinator, responder)
            }
        }
        table.add("GET", "/v1/sessions", .service) { request, principal, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: ["limit", "after"])
                let limit = try Pagination.limit(request)
                let after = try Pagination.after(request) ?? ""
                coordinator.listedSessions { result in
                    RouteSupport.answer(responder) { () throws(Refusal) in
                        let sessions = try result.get().filter { $0.identifier > after && principal.sees($0.identifier) }
                            .sorted { $0.identifier < $1.identifier }
                        let page = sessions.prefix(limit)
                        responder.respond(RouteSupport.json { json in
                            json.beginObject()
                            json.key("sessions"); json.beginArray()
                            for s in page { SessionRoutes.encode(s, into: &json) }
                            json.endArray()
                            Pagination.writeNext(sessions.count > limit ? page.last?.identifier : nil, into: &json)
                            json.endObject()
                        })
                    }
                }
            }
        }
        table.add("GET", "/v1/sessions/{identifier}", .session) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                let representation = SessionRoutes.representation(session)
                responder.respond(EntityTag.notModified(request, representation) ?? EntityTag.reply(representation))
            }
        }
        table.add("DELETE", "/v1/sessions/{identifier}", .session,
                  keeper: CompletedTaskCopies(coordinator: coordinator).forgetter(for:)) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: ["mode"])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                guard let mode = SessionLifecycle.InvalidateMode(rawValue: request.query("mode") ?? "finish") else {
                    throw Refusal(.invalid, "validation_failed", "mode must be finish or cancel", field: "mode")
                }
                try EntityTag.checkIfMatch(request) { SessionRoutes.representation(session) }
                coordinator.invalidate(session, mode: mode) { result in
                    switch result {
                    case .success: responder.respond(EntityTag.reply(SessionRoutes.representation(session), status: 202))
                    case .failure(let error): responder.respond(error.response)
                    }
                }
            }
        }
        // Both answer once what they did to the cookies is stored.
        for (action, perform) in [("reset", coordinator.reset), ("flush", coordinator.flush)]
            as [(String, @Sendable (SessionState, @escaping @Sendable () -> Void) -> Void)]
        {
            table.add("POST", "/v1/sessions/{identifier}/\(action)", .session, idempotent: true) { request, _, responder in
                RouteSupport.answer(responder) { () throws(Refusal) in
                    try RouteSupport.checkQuery(request, allowed: [])
                    let session = try coordinator.session(try RouteSupport.identifier(request))
                    try EntityTag.checkIfMatch(request) { SessionRoutes.representation(session) }
                    perform(session) {
                        responder.respond(EntityTag.reply(SessionRoutes.representation(session)))
                    }
                }
            }
        }
    }

    /// Creates or re-attaches, answering with the session (201 when it is new).
    static func put(_ identifier: String, _ put: TaskCoordinator.SessionRequest, _ coordinator: TaskCoordinator,
                    _ responder: Responder)
    {
        coordinator.putSession(identifier, put) { result in
            switch result {
            case .success(let (session, created, secret)):
                var json = JSONWriter(capacity: 1024)
                SessionRoutes.encode(session, into: &json, revealingSecret: secret)
                // The tag is that of the session as GET shows it (without a secret revealed once).
                let tag = EntityTag.of(secret == nil ? json.bytes : representation(session))
                responder.respond(.json(json.bytes, status: created ? 201 : 200, headers: HTTPHeaders([("ETag", tag)])))
            case .failure(let error):
                responder.respond(error.response)
            }
        }
    }

    /// The session as GET shows it: what its entity tag is of.
    static func representation(_ session: SessionState) -> [UInt8] {
        var json = JSONWriter(capacity: 1024)
        encode(session, into: &json)
        return json.bytes
    }

    /// The session object; `revealingSecret` adds the delegate secret transferd generated, which is
    /// shown in that one reply and never again.
    static func encode(_ session: SessionState, into json: inout JSONWriter, revealingSecret secret: String? = nil) {
        session.locked {
            json.beginObject()
            json.key("identifier"); json.string(session.identifier)
            json.key("mode"); json.string(session.mode.rawValue)
            json.key("state"); json.string(session.lifecycle.status.rawValue)
            json.key("configuration"); session.configuration.encode(into: &json, mode: session.mode)
            json.key("delegate")
            if let delegate = session.delegate { delegate.encode(into: &json, secret: secret) } else { json.null() }
            json.key("pending_events"); json.int(session.pendingEvents)
            json.key("acked_through"); json.int(session.ackedThrough)
            json.key("created_at"); json.string(session.createdAt.rfc3339)
            json.key("tasks"); json.beginObject()
            var total = 0
            for state in TaskState.allCases {
                let n = session.counts[state] ?? 0
                total += n
                json.key(escaping: state.rawValue); json.int(n)
            }
            json.key("total"); json.int(total)
            json.endObject()
            json.endObject()
        }
    }
}
