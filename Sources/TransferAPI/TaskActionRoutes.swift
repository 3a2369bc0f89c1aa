import HTTPServer
import TransferCore
import TransferModel

/// `POST …/tasks/{task}/resume|suspend|cancel`: URLSessionTask's `resume()`, `suspend()`, `cancel()`.
struct TaskActionRoutes {
    let coordinator: TaskCoordinator

    func register(in table: inout APIRouteTable) {
        let coordinator = coordinator
        table.add("POST", "/v1/sessions/{identifier}/tasks/{task}/resume", .session, idempotent: true) { request, _, responder in
            TaskActionRoutes.target(request, coordinator, responder) { session, id throws(Refusal) in
                coordinator.resume(session, id) { TaskRoutes.respond($0, responder) }
            }
        }
        table.add("POST", "/v1/sessions/{identifier}/tasks/{task}/suspend", .session, idempotent: true) { request, _, responder in
            TaskActionRoutes.target(request, coordinator, responder) { session, id throws(Refusal) in
                coordinator.suspend(session, id) { TaskRoutes.respond($0, responder) }
            }
        }
        table.add("POST", "/v1/sessions/{identifier}/tasks/{task}/cancel", .session, idempotent: true) { request, _, responder in
            TaskActionRoutes.target(request, coordinator, responder) { session, id throws(Refusal) in
                var produceResumeData = false
                if let body = try RouteSupport.jsonBody(request, required: false) {
                    var reader = try ObjectReader(body, path: "")
                    produceResumeData = try reader.bool("produce_resume_data") ?? false
                    try reader.finish()
                }
                coordinator.cancel(session, id, produceResumeData: produceResumeData) { TaskRoutes.respond($0, responder) }
            }
        }
    }

    /// Hands `act` the session and task id a task action is for, once `If-Match` holds (perhaps
    /// later: see `TaskRoutes.whenIfMatchHolds`); a refusal, of `act`'s too, is answered. Actions
    /// take no query parameters.
    static func target(_ request: HTTPRequest, _ coordinator: TaskCoordinator, _ responder: Responder,
                       _ act: @escaping @Sendable (SessionState, String) throws(Refusal) -> Void)
    {
        RouteSupport.answer(responder) { () throws(Refusal) in
            try RouteSupport.checkQuery(request, allowed: [])
            let session = try coordinator.session(try RouteSupport.identifier(request))
            let id = request.parameters["task"] ?? ""
            try TaskRoutes.whenIfMatchHolds(request, session, coordinator, responder) { () throws(Refusal) in try act(session, id) }
        }
    }
}
