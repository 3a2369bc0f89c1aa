import HTTPServer
import JSON
import Lifecycles
import TransferCore
import TransferModel

/// `/v1/sessions…`: create or re-attach, read, list (the sessions the caller may see), invalidate,
/// reset, flush.
struct SessionRoutes {
    let coordinator: TaskCoordinator

    func register(in table: inout APIRouteTable) {
        let coordinator = coordinator
        table.add("PUT", "/v1/sessions/{identifier}", .sessionCreation) { request, principal, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                let identifier = try RouteSupport.identifier(request)
                var body = try ObjectReader(try RouteSupport.jsonBody(request, required: false) ?? .object([]), path: "")
                let modeText = try body.string("mode") ?? "default"
                guard let mode = SessionMode(rawValue: modeText) else {
                    throw Refusal.invalid("mode", "must be background, default or ephemeral")
                }
                let configJSON = body.raw("configuration") ?? .object([])
                let configuration = try SessionConfiguration.parse(configJSON)
                var delegate: Delegate?? = nil
                var generated = false
                if case .some(let value) = body.nullableRaw("delegate") {
                    if let value, let parsed = try Delegate.parse(value) {
                        delegate = .some(parsed.0)
                        generated = parsed.generated
                    } else {
                        delegate = .some(nil)
                    }
                }
                try body.finish()
                let settings = try coordinator.engineSettings(for: configuration, roots: principal.roots)
                let put = TaskCoordinator.SessionRequest(mode: mode, configuration: configuration, configurationJSON: configJSON,
                                                         settings: settings, delegate: delegate, delegateSecretGenerated: generated)
                coordinator.putSession(identifier, put) { result in
                    switch result {
                    case .success(let (session, created, secret)):
                        responder.respond(RouteSupport.json(created ? 201 : 200) {
                            SessionRoutes.encode(session, into: &$0, revealingSecret: secret)
                        })
                    case .failure(let error):
                        responder.respond(error.response)
                    }
                }
            }
        }
        table.add("GET", "/v1/sessions", .service) { request, principal, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: ["limit", "after"])
                let limit = try RouteSupport.limit(request)
                let after = request.query("after") ?? ""
                let sessions = coordinator.registry.all.filter { $0.identifier > after && principal.sees($0.identifier) }
                    .sorted { $0.identifier < $1.identifier }
                let page = sessions.prefix(limit)
                responder.respond(RouteSupport.json { json in
                    json.beginObject()
                    json.key("sessions"); json.beginArray()
                    for s in page { SessionRoutes.encode(s, into: &json) }
                    json.endArray()
                    json.key("next"); json.optionalString(sessions.count > limit ? page.last?.identifier : nil)
                    json.endObject()
                })
            }
        }
        table.add("GET", "/v1/sessions/{identifier}", .session) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                responder.respond(RouteSupport.json { SessionRoutes.encode(session, into: &$0) })
            }
        }
        table.add("DELETE", "/v1/sessions/{identifier}", .session) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: ["mode"])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                guard let mode = SessionLifecycle.InvalidateMode(rawValue: request.query("mode") ?? "finish") else {
                    throw Refusal(.invalid, "validation_failed", "mode must be finish or cancel", field: "mode")
                }
                coordinator.invalidate(session, mode: mode) { result in
                    switch result {
                    case .success: responder.respond(RouteSupport.json(202) { SessionRoutes.encode(session, into: &$0) })
                    case .failure(let error): responder.respond(error.response)
                    }
                }
            }
        }
        // Both answer once what they did to the cookies is stored.
        for (action, perform) in [("reset", coordinator.reset), ("flush", coordinator.flush)]
            as [(String, @Sendable (SessionState, @escaping @Sendable () -> Void) -> Void)]
        {
            table.add("POST", "/v1/sessions/{identifier}/\(action)", .session) { request, _, responder in
                RouteSupport.answer(responder) { () throws(Refusal) in
                    try RouteSupport.checkQuery(request, allowed: [])
                    let session = try coordinator.session(try RouteSupport.identifier(request))
                    perform(session) {
                        responder.respond(RouteSupport.json { SessionRoutes.encode(session, into: &$0) })
                    }
                }
            }
        }
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
