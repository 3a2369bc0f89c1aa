import Digests
import HTTPServer
import TransferCore
import TransferModel

/// `/v1/sessions/{identifier}/tasks…`: create (one or a batch), list, read (with `?wait=`),
/// change, delete.
struct TaskRoutes {
    let coordinator: TaskCoordinator

    func register(in table: inout APIRouteTable) {
        let coordinator = coordinator
        table.add("POST", "/v1/sessions/{identifier}/tasks", .session) { request, principal, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                var creation = try TaskCreationRequest.parse(try RouteSupport.jsonBody(request)!, field: "")
                creation.traceparent = TaskRoutes.traceparent(request)
                let claim = try TaskRoutes.idempotencyClaim(request)
                let create: @Sendable () -> Void = { [creation] in
                    TaskRoutes.check([creation], in: session, for: principal, coordinator, responder) { creations, release in
                        coordinator.createTasks(in: session, creations, idempotency: claim) { result in
                            release()
                            switch result {
                            case .success(let outcome): TaskRoutes.respond(outcome, in: session, responder)
                            case .failure(let error): responder.respond(error.response)
                            }
                        }
                    }
                }
                guard let claim else { return create() }
                // A retry gets the first reply whatever changed since: never refused for a quota.
                coordinator.replay(in: session, claim) { replay in
                    RouteSupport.answer(responder) { () throws(Refusal) in
                        guard let replayed = try replay.get() else { return create() }
                        TaskRoutes.respond(replayed, in: session, responder)
                    }
                }
            }
        }
        table.add("POST", "/v1/sessions/{identifier}/tasks:batch", .session, idempotent: true) { request, principal, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                var body = try ObjectReader(try RouteSupport.jsonBody(request)!, path: "")
                guard let items = try body.array("tasks", maxCount: 10_000), !items.isEmpty else {
                    throw Refusal.invalid("tasks", "must be a non-empty array of tasks")
                }
                try body.finish()
                var creations: [TaskCreationRequest] = []
                creations.reserveCapacity(items.count)
                let traceparent = TaskRoutes.traceparent(request)
                for (i, item) in items.enumerated() {
                    var creation = try TaskCreationRequest.parse(item, field: "tasks[\(i)]")
                    creation.traceparent = traceparent
                    creations.append(creation)
                }
                TaskRoutes.check(creations, in: session, for: principal, coordinator, responder) { creations, release in
                    coordinator.createTasks(in: session, creations, idempotency: nil) { result in
                        release()
                        switch result {
                        case .success(.created(let created)):
                            var body: [UInt8] = Array(#"{"tasks":["#.utf8)
                            body.reserveCapacity(created.reduce(16) { $0 + $1.reply.count + 1 })
                            for (i, reply) in created.map(\.reply).enumerated() {
                                if i > 0 { body.append(0x2C) }
                                body.append(contentsOf: reply)
                            }
                            body.append(contentsOf: Array("]}".utf8))
                            responder.respond(.json(body, status: 201))
                        case .success(.replayed):
                            responder.respond(Refusal(.internalError, "internal_error", "unexpected replay").response)
                        case .failure(let error):
                            responder.respond(error.response)
                        }
                    }
                }
            }
        }
        table.add("GET", "/v1/sessions/{identifier}/tasks", .session) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: ["limit", "after", "state", "kind"])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                let limit = try Pagination.limit(request)
                let after = try Pagination.afterPosition(request)
                var state: TaskState?
                if let text = request.query("state") {
                    guard let s = TaskState(rawValue: text) else {
                        throw Refusal(.invalid, "validation_failed", "state must be suspended, running, canceling or completed", field: "state")
                    }
                    state = s
                }
                var kind: TaskKind?
                if let text = request.query("kind") {
                    guard let k = TaskKind(rawValue: text) else {
                        throw Refusal(.invalid, "validation_failed", "kind must be data, download or upload", field: "kind")
                    }
                    kind = k
                }
                coordinator.listTasks(session, after: after, state: state, kind: kind, limit: limit) { result in
                    RouteSupport.answer(responder) { () throws(Refusal) in
                        let page = try result.get()
                        responder.respond(RouteSupport.json { json in
                            json.beginObject()
                            json.key("tasks"); json.beginArray()
                            for r in page.tasks { r.encode(into: &json) }
                            json.endArray()
                            Pagination.writeNext(page.next.map(String.init), into: &json)
                            json.endObject()
                        })
                    }
                }
            }
        }
        // In cluster mode a completed task of a session another replica holds is answered from
        // the copy this replica kept of the holder's reply (`CompletedTaskCopies`).
        let copies = CompletedTaskCopies(coordinator: coordinator)
        table.add("GET", "/v1/sessions/{identifier}/tasks/{task}", .session,
                  copied: { copies.copy(for: $0) != nil }, keeper: copies.keeper(for:)) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: ["wait"])
                if let copy = copies.copy(for: request) {
                    responder.respond(EntityTag.notModified(request, copy) ?? EntityTag.reply(copy))
                    return
                }
                let session = try coordinator.session(try RouteSupport.identifier(request))
                let id = request.parameters["task"] ?? ""
                var wait = 0.0
                if let text = request.query("wait") {
                    guard let s = Double(text), s >= 0, s <= coordinator.limits.maxWaitSeconds else {
                        throw Refusal(.invalid, "validation_failed", "wait must be seconds from 0 to \(Int(coordinator.limits.maxWaitSeconds))", field: "wait")
                    }
                    wait = s
                }
                if wait == 0 {
                    coordinator.taskJSON(session, id) { result in
                        RouteSupport.answer(responder) { () throws(Refusal) in
                            let representation = try result.get()
                            responder.respond(EntityTag.notModified(request, representation) ?? EntityTag.reply(representation))
                        }
                    }
                    return
                }
                coordinator.waitForTask(session, id, seconds: wait) { result in
                    TaskRoutes.respond(result, responder)
                }
            }
        }
        table.add("PATCH", "/v1/sessions/{identifier}/tasks/{task}", .session, keeper: copies.forgetter(for:)) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                var body = try ObjectReader(try RouteSupport.jsonBody(request)!, path: "")
                let priority = try body.number("priority", in: 0...1)
                let description = try body.nullableString("description", maxLength: 4096)
                try body.finish()
                try TaskRoutes.whenIfMatchHolds(request, session, coordinator, responder) {
                    coordinator.update(session, request.parameters["task"] ?? "", priority: priority, description: description) { result in
                        TaskRoutes.respond(result, responder)
                    }
                }
            }
        }
        table.add("DELETE", "/v1/sessions/{identifier}/tasks/{task}", .session, keeper: copies.forgetter(for:)) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                try RouteSupport.checkQuery(request, allowed: [])
                let session = try coordinator.session(try RouteSupport.identifier(request))
                try TaskRoutes.whenIfMatchHolds(request, session, coordinator, responder) {
                    coordinator.delete(session, request.parameters["task"] ?? "") { result in
                        switch result {
                        case .success: responder.respond(HTTPResponse(status: 204))
                        case .failure(let error): responder.respond(error.response)
                        }
                    }
                }
            }
        }
    }

    /// Hands `create` the creations once they passed `check`, with its release: at once, or — when
    /// checking reads the store — on the store's readers, so the loop does not wait for it. A
    /// refusal is answered.
    static func check(_ creations: [TaskCreationRequest], in session: SessionState, for principal: Principal, _ coordinator: TaskCoordinator,
                      _ responder: Responder, then create: @escaping @Sendable ([TaskCreationRequest], _ release: @escaping @Sendable () -> Void) -> Void)
    {
        let checked: @Sendable () -> Void = {
            RouteSupport.answer(responder) { () throws(Refusal) in
                var creations = creations
                let release = try check(&creations, in: session, for: principal, coordinator)
                create(creations, release)
            }
        }
        guard coordinator.checkingReadsStore(creations, countsQuota: principal.limits.maxUnfinishedTasks != nil) else { return checked() }
        coordinator.onReaders(checked)
    }

    /// Everything a creation must pass before it is attempted: its `resume_data`, its paths
    /// (inside the caller's roots), its body sources (the caller's blobs), and room under the
    /// caller's `max_unfinished_tasks` — reserved last, so a refused request holds none. The
    /// returned release gives the room back once the creation has ended (the created tasks are
    /// counted in their sessions by then). A retry of a creation is answered before this
    /// (`TaskCoordinator.replay(in:)`), so it is never refused for what changed since.
    static func check(_ creations: inout [TaskCreationRequest], in session: SessionState, for principal: Principal,
                      _ coordinator: TaskCoordinator) throws(Refusal) -> @Sendable () -> Void
    {
        try coordinator.resolveResumeData(&creations)
        try coordinator.checkDestinations(creations, roots: principal.roots)
        try coordinator.checkBodySources(creations, in: session, roots: principal.roots, blobOwner: principal.blobOwnerFilter)
        guard let limit = principal.limits.maxUnfinishedTasks else { return {} }
        return try principal.quota.reserve(creations.count, limit: limit) {
            let counts = coordinator.taskCounts(where: principal.sees)
            return TaskState.allCases.reduce(0) { $0 + ($1 == .completed ? 0 : counts[$1] ?? 0) }
        }
    }

    /// A single creation's 201: the new task, or the first reply to its `Idempotency-Key` again.
    static func respond(_ outcome: CreationOutcome, in session: SessionState, _ responder: Responder) {
        switch outcome {
        case .created(let created):
            responder.respond(EntityTag.reply(created[0].reply, status: 201, headers: location(session.identifier, created[0].id)))
        case .replayed(let id, let reply):
            var headers = location(session.identifier, id)
            headers.add("Idempotent-Replayed", "true")
            responder.respond(EntityTag.reply(reply, status: 201, headers: headers))
        }
    }

    static func respond(_ result: Result<TaskRecord, Refusal>, _ responder: Responder) {
        switch result {
        case .success(let record): responder.respond(EntityTag.reply(record.jsonBytes()))
        case .failure(let error): responder.respond(error.response)
        }
    }

    /// Runs `then` once `If-Match` holds against the task the path names, as it is now: at once
    /// without the header, else once the task is read — later, on the store's readers, when it must
    /// be read from the store. A refusal after the read is answered through `responder`.
    static func whenIfMatchHolds(_ request: HTTPRequest, _ session: SessionState, _ coordinator: TaskCoordinator, _ responder: Responder,
                                 _ then: @escaping @Sendable () throws(Refusal) -> Void) throws(Refusal)
    {
        guard request.headers["if-match"] != nil else { return try then() }
        coordinator.taskJSON(session, request.parameters["task"] ?? "") { current in
            RouteSupport.answer(responder) { () throws(Refusal) in
                // A task that is gone fails the precondition; a store that cannot be read is no answer to it.
                let representation = try Refusal.absentIfNotFound { () throws(Refusal) in try current.get() }
                try EntityTag.checkIfMatch(request) { representation }
                try then()
            }
        }
    }

    static func location(_ session: String, _ task: String) -> HTTPHeaders {
        HTTPHeaders([("Location", "/v1/sessions/\(session)/tasks/\(task)")])
    }

    /// The request's W3C `traceparent`, kept with the tasks it creates. Invalid, or sent more than
    /// once, it is ignored as the Trace Context specification says (§3.2.2, §3.3.1).
    static func traceparent(_ request: HTTPRequest) -> String? {
        let values = request.headers.values("traceparent")
        guard values.count == 1 else { return nil }
        return TraceParent(values[0].trimmingCharacters())?.header
    }

    /// `Idempotency-Key` with the sha256 of the body it guards.
    static func idempotencyClaim(_ request: HTTPRequest) throws(Refusal) -> IdempotencyClaim? {
        guard let key = try IdempotencyLedger.key(request) else { return nil }
        let hash = SHA256Hex.of(request.body)
        return IdempotencyClaim(key: key, bodyHash: hash)
    }

}
