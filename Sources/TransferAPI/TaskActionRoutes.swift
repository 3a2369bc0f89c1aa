import HTTPServer
import TransferCore
import TransferModel

/// `POST …/tasks/{task}/resume|suspend|cancel`: URLSessionTask's `resume()`, `suspend()`, `cancel()`.
struct TaskActionRoutes {
    let coordinator: TaskCoordinator

    func register(in table: inout APIRouteTable) {
        let coordinator = coordinator
        table.add("POST", "/v1/sessions/{identifier}/tasks/{task}/resume", .session, idempotent: true) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                let (session, id) = try TaskActionRoutes.target(request, coordinator)
                coordinator.resume(session, id) { TaskRoutes.respond($0, responder) }
            }
        }
        table.add("POST", "/v1/sessions/{identifier}/tasks/{task}/suspend", .session, idempotent: true) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                let (session, id) = try TaskActionRoutes.target(request, coordinator)
                coordinator.suspend(session, id) { TaskRoutes.respond($0, responder) }
            }
        }
        table.add("POST", "/v1/sessions/{identifier}/tasks/{task}/cancel", .session, idempotent: true) { request, _, responder in
            RouteSupport.answer(responder) { () throws(Refusal) in
                let (session, id) = try TaskActionRoutes.target(request, coordinator)
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

    /// The session and task id a task action is for, once `If-Match` holds. Actions take no query
    /// parameters.
    static func target(_ request: HTTPRequest, _ coordinator: TaskCoordinator) throws(Refusal) -> (SessionState, String) {
        try RouteSupport.checkQuery(request, allowed: [])
        let session = try coordinator.session(try RouteSupport.identifier(request))
        try TaskRoutes.checkIfMatch(request, session, coordinator)
        return (session, request.parameters["task"] ?? "")
    }
}
