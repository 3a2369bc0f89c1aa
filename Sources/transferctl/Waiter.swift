import Foundation
import TransferdClient

/// Waits for tasks of one session to complete, fed by the session's event stream: `task.progress`
/// moves the progress lines, `task.completed` ends a task. On each (re)connection the tasks still
/// waited for are read once, so a task that ended while the stream was down is not missed.
struct Waiter {
    typealias Task = Components.Schemas.Task

    let api: API
    let session: String
    let board: ProgressBoard?
    /// The session's last seq before the tasks were created (`cursor`); nil (after what was
    /// acknowledged) for tasks created earlier. Never a seq read later: a task's state and the
    /// session's counters are not read atomically, so an event could fall between them.
    let after: Int?

    /// The seq of the session's latest event, to read a stream from before creating tasks.
    static func cursor(_ api: API, session: String) async throws -> Int {
        let found = try await api.client.getSession(path: .init(identifier: session)).ok.body.json
        return found.ackedThrough + found.pendingEvents
    }

    /// The completed tasks, in the order of `ids`.
    func wait(for ids: [String]) async throws -> [Task] {
        var done: [String: Task] = [:]
        defer { board?.finish() }  // the cursor comes back on every way out, errors included
        let interrupted = Failure.interrupted(tasks: ids)
        SignalWatch.shared.onInterrupt { [board] in
            board?.finish()
            Terminal.write("\n" + interrupted.description + "\n")
            return interrupted.exitCode
        }
        let stream = EventStream(api: api, session: session, after: after)
        for try await element in stream.elements() {
            switch element {
            case .connected:
                for id in ids where done[id] == nil {
                    let task = try await api.client.getTask(path: .init(identifier: session, task: id)).ok.body.json
                    board?.add(id, label: Self.label(task))
                    if task.state == .completed { finish(task, into: &done) } else { board?.update(id, progress: task.progress) }
                }
            case .event(let event):
                guard let data = event.data.data(using: .utf8),
                      let envelope = try? JSONDecoder().decode(Envelope.self, from: data),
                      let id = envelope.task, ids.contains(id), done[id] == nil else { continue }
                if event.type == "task.progress", let progress = envelope.progress {
                    board?.update(id, progress: progress)
                } else if event.type == "task.completed" {
                    // Read with `wait`: the GET may otherwise still see the task a moment before
                    // the change the event tells of.
                    let task = try await api.client.getTask(path: .init(identifier: session, task: id), query: .init(wait: 30)).ok.body.json
                    if task.state == .completed { finish(task, into: &done) }
                }
            }
            if done.count == ids.count { break }
        }
        guard done.count == ids.count else { throw Failure.unreachable("the event stream ended") }
        return ids.map { done[$0]! }
    }

    private func finish(_ task: Task, into done: inout [String: Task]) {
        done[task.id] = task
        board?.update(task.id, progress: task.progress)
        let failure = Self.failure(of: task)
        board?.complete(task.id, outcome: failure == nil ? "done" : "failed", failed: failure != nil)
    }

    /// Why a completed task counts as failed: its error, or the origin's status ≥ 400.
    static func failure(of task: Task) -> String? {
        if let error = task.error { return "\(task.id): \(error.code) — \(error.message)" }
        if let status = task.response?.status, status >= 400 { return "\(task.id): the origin answered \(status)" }
        return nil
    }

    /// What a progress line calls the task: the name of the file it writes, else the last part
    /// of its URL, else its id.
    static func label(_ task: Task) -> String {
        let destination = task.download?.destination.flatMap { URL(fileURLWithPath: $0).lastPathComponent }
        let name = destination ?? URL(string: task.request.url)?.lastPathComponent ?? ""
        return name.isEmpty || name == "/" ? task.id : name
    }

    /// The parts of an event's JSON the waiter reads: the task, and for `task.progress` its
    /// progress. A completed task is read with a GET: the API's own decoding of it.
    private struct Envelope: Decodable {
        var task: String?
        var progress: Components.Schemas.Task.ProgressPayload?

        enum Keys: String, CodingKey { case task, data }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            task = try container.decodeIfPresent(String.self, forKey: .task)
            progress = try? container.decode(Components.Schemas.Task.ProgressPayload.self, forKey: .data)
        }
    }
}
