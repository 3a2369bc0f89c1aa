import Glibc
import Reactor
import Synchronization
import TransferEngine
import TransferModel
import TransferStore

extension TaskCoordinator {
    /// `GET …/tasks/{task}?wait=S`: the task now if completed or `seconds` is 0, otherwise when it
    /// completes or the wait runs out, whichever comes first.
    package func waitForTask(_ session: SessionState, _ id: String, seconds: Double,
                     completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void)
    {
        let current: TaskRecord
        do { current = try record(session, id) } catch { return completion(.failure(error)) }
        guard seconds > 0, !current.isCompleted, let entry = liveEntry(session, id) else { return completion(.success(current)) }
        let answered = Atomic<Bool>(false)
        let answer: @Sendable (TaskRecord) -> Void = { record in
            if !answered.exchange(true, ordering: .acquiringAndReleasing) { completion(.success(record)) }
        }
        let alreadyDone: TaskRecord? = session.locked {
            if entry.record.isCompleted { return entry.record }
            entry.completionWaiters.append(answer)
            return nil
        }
        if let alreadyDone { return answer(alreadyDone) }
        let clock = clock
        clock.execute {
            clock.scheduleTimer(at: MonotonicClock.after(seconds: seconds)) {
                answer(session.locked { entry.snapshot })
            }
        }
    }

    /// `POST …/resume`: a suspended task runs again (continuing its partial file where the origin
    /// allows). Running or completed tasks are left as they are, as URLSession does.
    package func resume(_ session: SessionState, _ id: String, completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void) {
        guard let entry = liveEntry(session, id) else { return completion(Result { () throws(Refusal) in try record(session, id) }) }
        let change: TaskRecord? = session.locked {
            guard entry.record.state == .suspended, !entry.cancelRequested, !entry.completing else { return nil }
            var r = entry.record
            r.state = .running
            r.phase = .waiting
            // The stopped attempt has not let go of the file yet: it starts the next one then.
            if entry.transfer != nil || entry.outputBusy { entry.afterStop = .resume }
            return r
        }
        guard let change else { return completion(.success(session.locked { entry.snapshot })) }
        persist(session, events: [.summary(change, .taskResumed)], reportedBy: entry,
                [.updateState(session: session.identifier, id: id, state: .running, phase: .waiting)]) { [self] result in
            if case .failure(let error) = result { return completion(.failure(Refusal.storeFailure(error))) }
            session.locked { publishState(.running, of: entry, in: session) }
            startTransfer(entry, in: session)
            completion(.success(session.locked { entry.snapshot }))
        }
    }

    /// `POST …/suspend`: a running task stops; its partial file is kept for `resume`.
    package func suspend(_ session: SessionState, _ id: String, completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void) {
        guard let entry = liveEntry(session, id) else { return completion(Result { () throws(Refusal) in try record(session, id) }) }
        let change: TaskRecord? = session.locked {
            guard entry.record.state == .running, !entry.cancelRequested, !entry.completing else { return nil }
            var r = entry.record
            r.state = .suspended
            r.phase = .waiting
            entry.afterStop = .nothing
            return r
        }
        guard let change else { return completion(.success(session.locked { entry.snapshot })) }
        persist(session, events: [.summary(change, .taskSuspended)], reportedBy: entry,
                [.updateState(session: session.identifier, id: id, state: .suspended, phase: .waiting)]) { [self] result in
            if case .failure(let error) = result { return completion(.failure(Refusal.storeFailure(error))) }
            // The transfer running now, which may have started since the decision (a start
            // submits only while the state still says running).
            let handle = session.locked {
                publishState(.suspended, of: entry, in: session)
                return entry.transfer
            }
            handle?.stop(.suspended)
            completion(.success(session.locked { entry.snapshot }))
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
    package func cancel(_ session: SessionState, _ id: String, produceResumeData: Bool,
                completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void)
    {
        guard let entry = liveEntry(session, id) else { return completion(Result { () throws(Refusal) in try record(session, id) }) }
        cancel(entry, in: session, produceResumeData: produceResumeData) { completion(.success($0)) }
    }

    func cancel(_ entry: TaskEntry, in session: SessionState, produceResumeData: Bool,
                completion: @escaping @Sendable (TaskRecord) -> Void)
    {
        let (handle, completed, idle): (TransferHandle?, TaskRecord?, Bool) = session.locked {
            if entry.record.isCompleted { return (nil, entry.record, false) }
            entry.completionWaiters.append(completion)
            // Asked already: the completion it started answers this caller too.
            if entry.cancelRequested { return (nil, nil, false) }
            entry.cancelRequested = true
            entry.afterStop = .nothing
            entry.produceResumeData = produceResumeData
            // Nothing runs: completed here, unless a start or an attempt's end has the file (it
            // sees the request when it lets go of the file: `release`).
            guard let handle = entry.transfer else { return (nil, nil, !entry.outputBusy) }
            session.count(from: entry.record.state, to: .canceling)
            entry.record.state = .canceling
            return (handle, nil, false)
        }
        if let completed { return completion(completed) }
        if let handle {
            handle.stop(.cancelled)
        } else if idle {
            // Suspended, or waiting to retry: nothing runs, so the task completes here.
            fileWork.async { [self] in completeCancelled(entry, in: session) }
        }
    }

    /// `PATCH …/tasks/{task}`: priority and description.
    package func update(_ session: SessionState, _ id: String, priority: Double?, description: String??,
                completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void)
    {
        guard let entry = session.locked({ session.tasks[id] }) else {
            // A completed task out of memory: load it, change it, store it.
            guard var stored = try? record(session, id) else { return completion(.failure(Refusal.notFound("task \(id)"))) }
            if let priority { stored.priority = priority }
            if let description { stored.description = description }
            let changed = stored
            persist(session, [.updateDetails(session: session.identifier, id: id, priority: changed.priority,
                                             description: changed.description)]) { result in
                completion(result.map { _ in changed }.mapError(Refusal.storeFailure))
            }
            return
        }
        let (change, handle): (TaskRecord, TransferHandle?) = session.locked {
            var r = entry.record
            if let priority { r.priority = priority }
            if let description { r.description = description }
            return (r, entry.transfer)
        }
        // Only these two fields: the task may complete meanwhile, and its completion must stay.
        persist(session, [.updateDetails(session: session.identifier, id: id, priority: change.priority,
                                         description: change.description)]) { [self] result in
            if case .failure(let error) = result { return completion(.failure(Refusal.storeFailure(error))) }
            session.locked {
                entry.record.priority = change.priority
                entry.record.description = change.description
            }
            if let priority, let handle { engine.setPriority(handle, priority) }
            completion(.success(session.locked { entry.snapshot }))
        }
    }

    /// `DELETE …/tasks/{task}`: cancel if needed, then forget the task and the files transferd
    /// keeps for it. A file written to a client's own `download.destination` is the client's and stays.
    package func delete(_ session: SessionState, _ id: String, completion: @escaping @Sendable (Result<Void, Refusal>) -> Void) {
        let entry = session.locked { session.tasks[id] }
        if let entry, !entry.record.isCompleted {
            return cancel(entry, in: session, produceResumeData: false) { [self] _ in
                forget(session, id, completion: completion)
            }
        }
        forget(session, id, completion: completion)
    }

    /// Removes a completed task: its row, its spooled body, and the files transferd keeps for it.
    func forget(_ session: SessionState, _ id: String, completion: @escaping @Sendable (Result<Void, Refusal>) -> Void) {
        guard let record = try? record(session, id) else { return completion(.failure(Refusal.notFound("task \(id)"))) }
        let ownedBlob = TaskCoordinator.ownedBlob(of: record)
        let changes: [StoreChange] = [.deleteTask(session: session.identifier, id: id)] + (ownedBlob.map { [.deleteBlob($0)] } ?? [])
        persist(session, changes) { [self] result in
            if case .failure(let error) = result { return completion(.failure(Refusal.storeFailure(error))) }
            session.locked {
                if let entry = session.dropTask(id) {
                    entry.deleted = true
                    session.count(from: entry.record.state, to: nil)
                } else {
                    session.count(from: record.state, to: nil)
                }
            }
            let owned = [record.bodyLocation, record.destination == nil ? record.result?.location : nil].compactMap { $0 }
            fileWork.async { [self] in
                for path in owned { unlink(path) }
                removeOwnedBlobFile(of: record)
                // A partial file kept for resume data goes with its task.
                if record.error?.resumeData != nil { discardPartialOutput(of: record, session: session) }
            }
            completion(.success(()))
        }
    }
}
