import HTTPServer
import JSON
import TransferCore

/// Cluster mode: `GET …/tasks/{task}` of a completed task is answered on any replica. A replica
/// that does not hold the session keeps the holder's reply when it relays one of a completed task,
/// and answers from that copy until the holder's store notifies a change of the task (a completed
/// task changes only by `PATCH`, deletion, or its session's removal). A task still running is
/// always asked of its holder, which alone knows its progress.
struct CompletedTaskCopies: Sendable {
    let coordinator: TaskCoordinator

    /// The copy to answer `request` with here, when there is one (never for a long poll).
    func copy(for request: HTTPRequest) -> [UInt8]? {
        guard request.query("wait") == nil, let (session, task) = CompletedTaskCopies.names(request) else { return nil }
        return coordinator.completedCopy(session: session, id: task)
    }

    /// Before `request` is forwarded: what keeps the holder's answer, if it is a completed task's.
    func keeper(for request: HTTPRequest) -> (@Sendable (HTTPResponse) -> Void)? {
        guard request.method == "GET", request.query("wait") == nil, let (session, task) = CompletedTaskCopies.names(request)
        else { return nil }
        let generation = coordinator.copyGeneration(session: session, id: task)
        return { [coordinator] response in
            guard response.status == 200, case .bytes(let body) = response.body,
                  let json = try? JSONParser.parse(body), json["state"] == .string("completed")
            else { return }
            coordinator.keepCopy(body, session: session, id: task, generation: generation)
        }
    }

    /// Before a change of a task (or its session) is forwarded to the holder: the copy goes at
    /// once, so a client reads its own change through this replica without waiting for the
    /// holder's notification (which drops the copies of every other replica).
    func forgetter(for request: HTTPRequest) -> (@Sendable (HTTPResponse) -> Void)? {
        if let session = request.parameters["identifier"] {
            coordinator.tasksChanged("\(session)/\(request.parameters["task"] ?? "")")
        }
        return nil
    }

    private static func names(_ request: HTTPRequest) -> (String, String)? {
        guard let session = request.parameters["identifier"], let task = request.parameters["task"] else { return nil }
        return (session, task)
    }
}
