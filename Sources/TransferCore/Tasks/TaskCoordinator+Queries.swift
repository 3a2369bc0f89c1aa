import TransferModel
import TransferStore

/// Reads for the API. A read that may reach the store runs on the store's readers and answers
/// there, never on the caller's thread: the caller is an HTTP event loop, and with PostgreSQL a
/// read is a round trip that may wait for a lock. What memory holds is answered at once.
extension TaskCoordinator {
    package struct TaskPage: Sendable {
        package let tasks: [TaskRecord]
        /// The cursor for the next page, when there may be one.
        package let next: Int64?
    }

    /// A page of a session's tasks in creation order, paged in the session's store (which holds
    /// every committed task) with the fresher in-memory copy of each task swapped in.
    package func listTasks(_ session: SessionState, after: Int64, state: TaskState?, kind: TaskKind?, limit: Int,
                           answer: @escaping @Sendable (Result<TaskPage, Refusal>) -> Void)
    {
        journal.readStore(store(of: session), { try $0.listTasks(session: session.identifier, after: after, state: state, kind: kind, limit: limit + 1) }) {
            answer($0.map { stored in
                var page = stored
                session.locked {
                    for i in page.indices {
                        if let entry = session.tasks[page[i].id], !entry.lifecycle.isDeleted { page[i] = entry.snapshot }
                    }
                }
                let more = page.count > limit
                if more { page.removeLast() }
                return TaskPage(tasks: page, next: more ? page.last?.sequence : nil)
            })
        }
    }

    /// The task's current record: from memory, or from the store on the caller's thread (not for
    /// an event loop).
    package func record(_ session: SessionState, _ id: String) throws(Refusal) -> TaskRecord { try journal.record(session, id) }

    /// The task's current record, with the store read on its readers.
    package func record(_ session: SessionState, _ id: String, answer: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void) {
        journal.record(session, id, answer: answer)
    }

    /// The task object as the API returns it, encoded (cached for tasks that are not moving).
    package func taskJSON(_ session: SessionState, _ id: String, answer: @escaping @Sendable (Result<[UInt8], Refusal>) -> Void) {
        if let bytes = session.locked({ session.tasks[id].flatMap { $0.lifecycle.isDeleted ? nil : $0.json } }) { return answer(.success(bytes)) }
        let (cached, generation) = completedReplies.lookup(session: session.identifier, id: id)
        if let cached { return answer(.success(cached)) }
        record(session, id) { [completedReplies] result in
            answer(result.map { record in
                let bytes = record.jsonBytes()
                if record.isCompleted { completedReplies.insert(bytes, session: session.identifier, id: id, generation: generation) }
                return bytes
            })
        }
    }


    /// Runs `work`, which reads the store, on the store's readers.
    package func onReaders(_ work: @escaping @Sendable () -> Void) {
        store.submitRead(work)
    }

    /// `taskCounts(where:)` for a caller on an event loop: in cluster mode it reads the store.
    package func taskCounts(where visible: @escaping @Sendable (String) -> Bool, answer: @escaping @Sendable ([TaskState: Int]) -> Void) {
        guard sharesStore else { return answer(taskCounts(where: visible)) }
        onReaders { [self] in answer(taskCounts(where: visible)) }
    }

    /// `listedSessions()` for a caller on an event loop: in cluster mode it reads the store.
    package func listedSessions(answer: @escaping @Sendable (Result<[SessionState], Refusal>) -> Void) {
        guard sharesStore else { return answer(.success(registry.all)) }
        onReaders { [self] in answer(Result { () throws(Refusal) in try listedSessions() }) }
    }

    /// Whether checking these creations reads the store: a blob or another task as a body does,
    /// and in cluster mode so does a quota (it counts the sessions other replicas hold).
    package func checkingReadsStore(_ requests: [TaskCreationRequest], countsQuota: Bool) -> Bool {
        (countsQuota && sharesStore) || requests.contains {
            switch $0.body {
            case .blob?, .task?: true
            case .file?, .inline?, nil: false
            }
        }
    }

    /// Tasks by state across the sessions whose identifiers `visible` accepts (every session by
    /// default), for `/v1/stats` and task quotas.
    package func taskCounts(where visible: (String) -> Bool = { _ in true }) -> [TaskState: Int] {
        var totals: [TaskState: Int] = [:]
        for session in registry.all where visible(session.identifier) {
            session.locked { for (state, n) in session.counts { totals[state, default: 0] += n } }
        }
        // Cluster mode: the sessions other replicas hold count as committed, so a quota holds
        // across replicas.
        for (state, n) in countsHeldElsewhere(where: visible) { totals[state, default: 0] += n }
        return totals
    }

    /// What the transfers of some sessions are doing, for a caller who sees only those: how many
    /// wait for a slot, how many run, and their rates as their progress reports them (body bytes
    /// received by downloads and data tasks, sent by uploads).
    package func activity(where visible: (String) -> Bool) -> (waiting: Int, running: Int, down: Double, up: Double) {
        var result = (waiting: 0, running: 0, down: 0.0, up: 0.0)
        for session in registry.all where visible(session.identifier) {
            session.locked {
                for entry in session.tasks.values where entry.record.state == .running {
                    switch entry.record.phase {
                    case .scheduled: result.waiting += 1
                    case .connecting, .transferring:
                        result.running += 1
                        if entry.record.kind == .upload { result.up += entry.record.progress.bytesPerSecond }
                        else { result.down += entry.record.progress.bytesPerSecond }
                    case .waiting, .retrying, .finished: break
                    }
                }
            }
        }
        return result
    }
}
