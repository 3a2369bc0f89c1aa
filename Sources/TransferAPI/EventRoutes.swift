import HTTPServer
import JSON
import Reactor
import TransferCore
import TransferModel

/// `/v1/sessions/{identifier}/events…`: read the journal (long-poll or Server-Sent Events),
/// acknowledge, list webhook attempts, redeliver one event.
struct EventRoutes {
    let coordinator: TaskCoordinator
    let principals: PrincipalDirectory
    /// Seconds between SSE heartbeats (comment lines that keep proxies and clients from timing out).
    let heartbeat: Double

    func register(in table: inout APIRouteTable) {
        let coordinator = coordinator, heartbeat = heartbeat, principals = principals
        // A durable session's journal is not forwarded: a long poll or an event stream waits for
        // minutes, and each replica answers it from the shared event log, woken by the store when
        // another adds to it. An ephemeral session's journal is in its holder's memory only.
        table.add("GET", "/v1/sessions/{identifier}/events", .session,
                  servedHere: { request in request.parameters["identifier"].map(coordinator.readsEventsHere) ?? true }) { request, principal, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: ["after", "limit", "wait"])
                // In cluster mode a durable session another replica holds is read here, from the
                // shared store, woken by its notifications: the journal needs no forwarding.
                let session = try coordinator.sessionForReading(try RouteSupport.identifier(request))
                let limit = try Pagination.limit(request)
                let wantsStream = EventRoutes.wantsStream(accept: request.headers["accept"])
                // A reconnecting EventSource names the last event it saw (WHATWG HTML §9.2.4);
                // without any cursor, reading starts after what was acknowledged: what a
                // re-attaching client missed.
                var from = try EventRoutes.cursor(request.query("after"), field: "after")
                if wantsStream, let last = try EventRoutes.cursor(request.headers["last-event-id"], field: "Last-Event-ID") { from = last }
                let after = from ?? session.locked { session.ackedThrough }
                if wantsStream {
                    let stream = EventStream(session: session, coordinator: coordinator, after: after, heartbeat: heartbeat,
                                             stillAllowed: { principals.stillSees(principal, session.identifier) })
                    responder.respond(HTTPResponse(status: 200, headers: HTTPHeaders([
                        ("Content-Type", "text/event-stream"), ("Cache-Control", "no-store"), ("X-Accel-Buffering", "no"),
                    ]), body: .stream { stream.run(on: $0) }))
                    return
                }
                var wait = 0.0
                if let text = request.query("wait") {
                    guard let s = Double(text), s >= 0, s <= coordinator.limits.maxWaitSeconds else {
                        throw Refusal(.invalid, "validation_failed", "wait must be seconds from 0 to \(Int(coordinator.limits.maxWaitSeconds))", field: "wait")
                    }
                    wait = s
                }
                coordinator.waitForEvents(session, after: after, limit: limit, seconds: wait) { result in
                    guard case .success(let events) = result else {
                        if case .failure(let refusal) = result { responder.respond(refusal.response) }
                        return
                    }
                    responder.respond(RouteSupport.json { json in
                        json.beginObject()
                        json.key("events"); json.beginArray()
                        for event in events { event.encode(into: &json) }
                        json.endArray()
                        // The stream's cursor is the seq read through: a string, as every list's is.
                        json.key("next"); json.string(String(events.last?.seq ?? after))
                        json.key("pending_events"); json.int(session.locked { session.pendingEvents })
                        json.endObject()
                    })
                }
            }
        }
        table.add("POST", "/v1/sessions/{identifier}/events/ack", .session, idempotent: true) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                var body = try ObjectReader(try RouteSupport.jsonBody(request)!, path: "")
                guard let through = try body.integer("through", in: 0...Int64.max / 2) else {
                    throw Refusal.invalid("through", "is required: the seq of the last event handled")
                }
                try body.finish()
                coordinator.acknowledge(session, through: through) { result in
                    switch result {
                    case .success:
                        responder.respond(RouteSupport.json { json in
                            session.locked {
                                json.beginObject()
                                json.key("acked_through"); json.int(session.ackedThrough)
                                json.key("pending_events"); json.int(session.pendingEvents)
                                json.endObject()
                            }
                        })
                    case .failure(let error):
                        responder.respond(error.response)
                    }
                }
            }
        }
        table.add("GET", "/v1/sessions/{identifier}/deliveries", .session) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: ["after", "limit"])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                coordinator.deliveries(session, after: try Pagination.afterPosition(request), limit: try Pagination.limit(request)) { result in
                    RouteSupport.answer(responder) { () throws(Refusal) in
                        let page = try result.get()
                        responder.respond(RouteSupport.json { json in
                            json.beginObject()
                            json.key("deliveries"); json.beginArray()
                            for (_, a) in page.rows { EventRoutes.encode(a, into: &json) }
                            json.endArray()
                            Pagination.writeNext(page.next.map(String.init), into: &json)
                            json.endObject()
                        })
                    }
                }
            }
        }
        table.add("POST", "/v1/sessions/{identifier}/events/{event}/redeliver", .session, idempotent: true) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                try coordinator.redeliver(session, eventID: request.parameters["event"] ?? "") { result in
                    RouteSupport.answer(responder) { () throws(Refusal) in
                        try result.get()
                        responder.respond(RouteSupport.json(202) { json in
                            json.beginObject(); json.key("status"); json.string("queued"); json.endObject()
                        })
                    }
                }
            }
        }
    }

    /// Whether a listing is answered as a Server-Sent Events stream: when `Accept` names
    /// `text/event-stream` and not `application/json`. A client that accepts both (as generated
    /// clients do, listing every type the operation documents) gets the page, which always ends.
    static func wantsStream(accept: String?) -> Bool {
        guard let accept = accept?.lowercased() else { return false }
        return accept.contains("text/event-stream") && !accept.contains("application/json")
    }

    /// The event stream's cursor: the seq read through (a whole number ≥ 0, as a string like every
    /// list's cursor), or absent.
    static func cursor(_ text: String?, field: String) throws(Refusal) -> Int64? {
        guard let text else { return nil }
        guard let n = Int64(text.trimmingCharacters()), n >= 0 else {
            throw Refusal(.malformed, "invalid_parameter", "\(field) must be an event seq", field: field)
        }
        return n
    }

    static func encode(_ a: DeliveryAttempt, into json: inout JSONWriter) {
        json.beginObject()
        json.key("event"); json.string(a.event)
        json.key("seq"); json.int(a.seq)
        json.key("attempt"); json.int(a.attempt)
        json.key("at"); json.string(a.at.rfc3339)
        json.key("status"); if let s = a.status { json.int(s) } else { json.null() }
        json.key("error"); json.optionalString(a.error)
        json.key("next_attempt_at"); json.optionalString(a.nextAttemptAt?.rfc3339)
        json.endObject()
    }
}

/// One Server-Sent Events stream: journaled events after the cursor, then live ones as they are
/// committed (and live progress), with a heartbeat comment between. `id:` is the seq, so a client
/// reconnecting with `Last-Event-ID` continues where it stopped. `session.invalidated` is the
/// last event a session has: the stream ends after it. So does a stream whose principal may no
/// longer see the session (a reloaded auth file), at its next heartbeat.
final class EventStream: Sendable {
    private struct State {
        /// Live events that arrived while the journal was being replayed (nil once it was).
        var buffered: [Event]? = []
        /// Last seq written: a live event at or below it was already replayed.
        var written: Int64
    }

    private let session: SessionState
    private let coordinator: TaskCoordinator
    private let after: Int64
    private let heartbeat: Double
    private let stillAllowed: @Sendable () -> Bool
    private let state: Locked<State>

    init(session: SessionState, coordinator: TaskCoordinator, after: Int64, heartbeat: Double,
         stillAllowed: @escaping @Sendable () -> Bool)
    {
        self.session = session
        self.coordinator = coordinator
        self.after = after
        self.heartbeat = heartbeat
        self.stillAllowed = stillAllowed
        state = Locked(State(written: after))
    }

    func run(on stream: ResponseStream) {
        // Subscribe first, then replay: an event committed in between is in one or the other,
        // and the seq check drops the second copy. Writes happen under the state lock, so live
        // events and the end of the replay cannot overtake each other.
        let subscription = session.feed.subscribe { [self] events in
            state.withLock { s in
                if s.buffered != nil {
                    s.buffered!.append(contentsOf: events)
                } else {
                    write(events, to: stream, state: &s)
                }
            }
        }
        stream.onTermination { [session] in session.feed.unsubscribe(subscription) }
        coordinator.fileWork.async { [self] in
            var cursor = after
            while !stream.isClosed {
                // The journal cannot be read: the stream ends rather than skip what it holds, and
                // the client reconnects from the last `id:` it saw (a 503 while the outage lasts).
                guard let page = try? coordinator.events(of: session, after: cursor, limit: 500) else { return stream.finish() }
                state.withLock { write(page, to: stream, state: &$0) }
                guard let last = page.last, page.count == 500 else { break }
                cursor = last.seq
            }
            state.withLock { s in
                let late = s.buffered ?? []
                s.buffered = nil
                write(late, to: stream, state: &s)
            }
            scheduleHeartbeat(stream)
        }
    }

    private func write(_ events: [Event], to stream: ResponseStream, state s: inout State) {
        var out: [UInt8] = []
        for event in events {
            if event.type.isJournaled {
                guard event.seq > s.written else { continue }
                s.written = event.seq
                out += Array("id: \(event.seq)\n".utf8)
            }
            out += Array("event: \(event.type.rawValue)\ndata: ".utf8)
            out += event.jsonBytes
            out += [0x0A, 0x0A]
        }
        if !out.isEmpty { stream.write(out) }
        if events.contains(where: { $0.type == .sessionInvalidated }) { stream.finish() }
    }

    private func scheduleHeartbeat(_ stream: ResponseStream) {
        let clock = coordinator.clock
        clock.execute { [self] in
            clock.scheduleTimer(at: MonotonicClock.after(seconds: heartbeat)) { [self] in
                guard !stream.isClosed else { return }
                guard stillAllowed() else { return stream.finish() }
                stream.write(Array(": keep-alive\n\n".utf8))
                scheduleHeartbeat(stream)
            }
        }
    }
}
