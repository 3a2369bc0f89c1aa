import Lifecycles
import TransferModel
import TransferStore

/// What a task becomes, stored and then shown: the record, its events, its waiters woken.
extension TaskRunner {
    /// Stores a task's new record (with `also` and `events`, in the same batch), then
    /// publishes it: its completion, or what an attempt's end made of it (progress, response,
    /// phase). The latter never changes `state`, which suspend and resume decide: one of those
    /// may have been decided since the record was taken, and be committed before or after it.
    /// The task is encoded here (not on the store's writer), for its row, its cached reply (when
    /// completed) and any event that carries it (`api` is passed to `events`).
    func commit(_ record: TaskRecord, of entry: TaskEntry, in session: SessionState,
                events: @escaping @Sendable ([UInt8]) -> [EventDraft] = { _ in [] }, endsBusy: Bool = false,
                also: [StoreChange] = [], then: (@Sendable () -> Void)? = nil)
    {
        let api = record.jsonBytes()
        let document = record.storageDocument()
        let update: StoreChange = record.isCompleted
            ? .updateTask(record, document: document) : .updateTaskKeepingState(record, document: document)
        // A failure is logged by `persist`.
        journal.persist(session, events: events(api), reportedBy: entry, [update] + also) { [self] result in
            // A completion the store could not take (the database down, the disk full) is not
            // one: shown in memory, it would be answered as completed, then dropped from memory
            // and read back from the store as running. It is committed again until it is stored.
            // A refusal of the store's own (`StoreError`: closed, fenced — the lease went to a
            // replica that runs the task from what the store has — or rejected) is final.
            if case .failure(let error) = result, record.isCompleted, !(error is StoreError) {
                clock.schedule(after: TaskRunner.completionRetryDelay) { [self] in
                    commit(record, of: entry, in: session, events: events, endsBusy: endsBusy, also: also, then: then)
                }
                return
            }
            // A refused batch gave its busy count back already (`persist`).
            let stored = if case .success = result { true } else { false }
            publish(record, of: entry, in: session, encoded: api, keepingState: !record.isCompleted, endsBusy: endsBusy && stored)
            then?()
        }
    }

    /// Seconds between commits of a completion the store refused.
    static let completionRetryDelay = 1.0

    /// Makes `record` the current state of `entry`, keeping counts and waking long-polls. A change
    /// decided before the task completed (and not stored over it either) is dropped here too: a
    /// completed task stays completed. With `keepingState` the entry's state stays as it is now
    /// (see `commit`). `endsBusy`: a completion counted in the session's busyTasksEnding.
    func publish(_ record: TaskRecord, of entry: TaskEntry, in session: SessionState, encoded: [UInt8]? = nil,
                 keepingState: Bool = false, endsBusy: Bool = false)
    {
        var quiet = false
        let waiters: [@Sendable (TaskRecord) -> Void]? = session.locked {
            if entry.record.isCompleted && !record.isCompleted { return nil }
            if endsBusy { session.busyTasksEnding -= 1 }
            var record = record, encoded = encoded
            if keepingState && record.state != entry.record.state {
                record.state = entry.record.state
                encoded = nil
            }
            session.count(from: entry.record.state, to: record.state)
            entry.setRecord(record, encoded: encoded)
            guard record.isCompleted, step(entry, .completionStored).contains(.notifyWaiters) else { return [] }
            // A durable session's completed task is read from the store from now on (it was
            // stored before this): memory holds the tasks that can still change, not the history.
            // No one can wait on it any more — waiters join under this lock, only while it has
            // not completed. An ephemeral session's task stays: its store is memory too, and a
            // data task's body is kept only in its entry.
            if session.mode.isDurable { session.dropTask(record.id) }
            quiet = session.busyCount == 0
            defer { entry.completionWaiters = [] }
            return entry.completionWaiters
        }
        guard let waiters else { return }
        for waiter in waiters { waiter(record) }
        guard record.isCompleted else { return }
        retirement.checkInvalidation(session)
        // The session's last running task is done: what its burst allocated is free now.
        if quiet { heapTrimmer.request() }
    }
}
