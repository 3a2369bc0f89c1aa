import Glibc
import Lifecycles
import Reactor
import TransferEngine
import TransferModel
import TransferStore

/// What clients ask of tasks that exist: suspend, resume, cancel, change, delete. Each request
/// is stored before the task's lifecycle takes it, and then performed by the runner.
struct TaskControl: Sendable {
    let runner: TaskRunner
    /// Replies of completed tasks, dropped when a task changes or goes.
    let completedReplies: CompletedReplyCache

    private var journal: TaskJournal { runner.journal }
    /// `POST …/resume`: a suspended task runs again (continuing its partial file where the origin
    /// allows). Running or completed tasks are left as they are, as URLSession does.
    func resume(_ session: SessionState, _ id: String, completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void) {
        request(.resume, of: session, id, completion: completion)
    }

    /// `POST …/suspend`: a running task stops; its partial file is kept for `resume`.
    func suspend(_ session: SessionState, _ id: String, completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void) {
        request(.suspend, of: session, id, completion: completion)
    }

    /// A resume or suspend. Its record and event are stored before the task's lifecycle takes it,
    /// so that no one sees the task move before the move is durable (a store that fails leaves it
    /// where it was); the lifecycle is asked first, on a copy, whether the request changes anything.
    private func request(_ event: TaskLifecycle.Event, of session: SessionState, _ id: String,
                         completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void)
    {
        guard let entry = journal.liveEntry(session, id) else { return journal.record(session, id, answer: completion) }
        let change: (TaskRecord, EventType)? = session.locked {
            var probe = entry.lifecycle
            guard case .perform(let actions) = probe.handle(event) else { return nil }
            for case .writeRecord(event: let announced?) in actions {
                var r = entry.record
                r.state = probe.state
                r.phase = .waiting
                return (r, announced == .resumed ? .taskResumed : .taskSuspended)
            }
            return nil
        }
        guard let (change, announced) = change else { return completion(.success(session.locked { entry.snapshot })) }
        journal.persist(session, events: [.summary(change, announced)], reportedBy: entry,
                [.updateState(session: session.identifier, id: id, state: change.state, phase: change.phase)]) { [self] result in
            if case .failure(let error) = result { return completion(.failure(Refusal.storeFailure(error))) }
            let (actions, handle) = session.locked {
                publishState(change.state, of: entry, in: session)
                return (runner.step(entry, event), entry.transfer)
            }
            if actions.contains(.stopTransfer(.suspended)) { handle?.stop(.suspended) }
            // A resume starts the task, which is file work: off the store's completion queue.
            runner.files.fileWork.async { [runner] in
                runner.perform(actions, of: entry, in: session)
                completion(.success(session.locked { entry.snapshot }))
            }
        }
    }

    /// A suspend or resume, once stored: only the state (and phase) change — what an attempt
    /// reported meanwhile stays — and never over a completion decided meanwhile (lock held).
    private func publishState(_ state: TaskState, of entry: TaskEntry, in session: SessionState) {
        guard !entry.record.isCompleted else { return }
        session.count(from: entry.record.state, to: state)
        entry.record.state = state
        entry.record.phase = .waiting
    }

    /// `POST …/cancel`: the task completes with `cancelled`; answered once it has.
    func cancel(_ session: SessionState, _ id: String, produceResumeData: Bool,
                completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void)
    {
        guard let entry = journal.liveEntry(session, id) else { return journal.record(session, id, answer: completion) }
        cancel(entry, in: session, produceResumeData: produceResumeData) { completion(.success($0)) }
    }

    /// A running transfer is stopped (the task shows `canceling` until it has); a task with
    /// nothing running completes here; one whose output file is busy completes when it is let go.
    /// Asked again, the first cancel's completion answers this caller too.
    func cancel(_ entry: TaskEntry, in session: SessionState, produceResumeData: Bool,
                completion: @escaping @Sendable (TaskRecord) -> Void)
    {
        let (handle, completed, actions): (TransferHandle?, TaskRecord?, [TaskLifecycle.Action]) = session.locked {
            if entry.record.isCompleted { return (nil, entry.record, []) }
            entry.completionWaiters.append(completion)
            let actions = runner.step(entry, .cancel(produceResumeData: produceResumeData))
            guard actions.contains(.stopTransfer(.cancelled)) else { return (nil, nil, actions) }
            session.count(from: entry.record.state, to: entry.lifecycle.state)
            entry.record.state = entry.lifecycle.state
            return (entry.transfer, nil, actions)
        }
        if let completed { return completion(completed) }
        if let handle { return handle.stop(.cancelled) }
        guard !actions.isEmpty else { return }
        // Suspended, or waiting to start or retry: nothing runs, so the task completes here.
        runner.files.fileWork.async { [self] in runner.perform(actions, of: entry, in: session) }
    }

    /// `PATCH …/tasks/{task}`: priority and description.
    func update(_ session: SessionState, _ id: String, priority: Double?, description: String??,
                completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void)
    {
        guard let entry = session.locked({ session.tasks[id] }) else {
            // A completed task out of memory: load it (on the store's readers), change it, store it.
            return journal.record(session, id) { [self] loaded in
                guard case .success(var stored) = loaded else { return completion(loaded) }
                if let priority { stored.priority = priority }
                if let description { stored.description = description }
                let changed = stored
                journal.persist(session, [.updateDetails(session: session.identifier, id: id, priority: changed.priority,
                                                         description: changed.description)]) { [self] result in
                    completedReplies.invalidate(session: session.identifier, id: id)
                    completion(result.map { _ in changed }.mapError(Refusal.storeFailure))
                }
            }
        }
        let (change, handle): (TaskRecord, TransferHandle?) = session.locked {
            var r = entry.record
            if let priority { r.priority = priority }
            if let description { r.description = description }
            return (r, entry.transfer)
        }
        // Only these two fields: the task may complete meanwhile, and its completion must stay.
        journal.persist(session, [.updateDetails(session: session.identifier, id: id, priority: change.priority,
                                         description: change.description)]) { [self] result in
            if case .failure(let error) = result { return completion(.failure(Refusal.storeFailure(error))) }
            // It may have completed meanwhile, left memory and been read since.
            completedReplies.invalidate(session: session.identifier, id: id)
            session.locked {
                entry.record.priority = change.priority
                entry.record.description = change.description
            }
            if let priority, let handle { runner.engine.setPriority(handle, priority) }
            completion(.success(session.locked { entry.snapshot }))
        }
    }

    /// `DELETE …/tasks/{task}`: cancel if needed, then forget the task and the files transferd
    /// keeps for it. A file written to a client's own `download.destination` is the client's and stays.
    func delete(_ session: SessionState, _ id: String, completion: @escaping @Sendable (Result<Void, Refusal>) -> Void) {
        let entry = session.locked { session.tasks[id] }
        if let entry, !entry.record.isCompleted {
            return cancel(entry, in: session, produceResumeData: false) { [self] _ in
                forget(session, id, completion: completion)
            }
        }
        forget(session, id, completion: completion)
    }

    /// Removes a completed task: its row, its spooled body, and the files transferd keeps for it
    /// (read on the store's readers when it is not in memory).
    func forget(_ session: SessionState, _ id: String, completion: @escaping @Sendable (Result<Void, Refusal>) -> Void) {
        journal.record(session, id) { [self] loaded in
            switch loaded {
            case .success(let record): forget(record, of: session, completion: completion)
            case .failure(let error): completion(.failure(error))
            }
        }
    }

    private func forget(_ record: TaskRecord, of session: SessionState, completion: @escaping @Sendable (Result<Void, Refusal>) -> Void) {
        let id = record.id
        let ownedBlob = TaskFiles.ownedBlob(of: record)
        let changes: [StoreChange] = [.deleteTask(session: session.identifier, id: id)] + (ownedBlob.map { [.deleteBlob($0)] } ?? [])
        journal.persist(session, changes) { [self] result in
            if case .failure(let error) = result { return completion(.failure(Refusal.storeFailure(error))) }
            completedReplies.invalidate(session: session.identifier, id: id)
            session.locked {
                if let entry = session.dropTask(id) {
                    _ = runner.step(entry, .deleted)
                    session.count(from: entry.record.state, to: nil)
                } else {
                    session.count(from: record.state, to: nil)
                }
            }
            let owned = [record.bodyLocation, record.destination == nil ? record.result?.location : nil].compactMap { $0 }
            // Answered once the files are gone: a client that deletes a task and then looks finds
            // nothing of it left.
            runner.files.fileWork.async { [self] in
                for path in owned { unlink(path) }
                runner.files.removeOwnedBlobFile(of: record)
                // A partial file kept for resume data goes with its task.
                if record.error?.resumeData != nil { runner.files.discardPartialOutput(of: record, session: session) }
                completion(.success(()))
            }
        }
    }
}
