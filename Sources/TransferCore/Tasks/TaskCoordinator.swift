import Digests
import Dispatch
import Logging
import Reactor
import TransferEngine
import TransferModel
import TransferStore

/// The service core's centre: sessions and tasks in memory (the registry), their durable copy
/// (the store), and their transfers (the engine). API handlers call it; the engine reports back
/// to it; it keeps the three consistent.
///
/// Ordering rule: a change that a reply or an event promises is committed to the store before it
/// becomes visible in memory (and before the reply), so nothing a client was told is lost by a crash.
package final class TaskCoordinator: @unchecked Sendable {
    package let registry = SessionRegistry()
    /// Returns freed memory to the system when a session's burst of work ends.
    let heapTrimmer = HeapTrimmer()
    /// Encodings of completed tasks read lately (a durable session's are not in memory).
    let completedReplies = CompletedReplyCache()
    /// Where durable sessions are kept (SQLite, in the service).
    let store: any TransferStore
    /// Where ephemeral sessions are kept: nothing of them reaches the disk, and what no one will
    /// read again goes — events acknowledged (and delivered, while a delegate waits for them),
    /// webhook attempts beyond each session's latest 1,000.
    let ephemeralStore = InMemoryTransferStore(options: InMemoryTransferStore.Options(trimsAcknowledgedEvents: true,
                                                                                      attemptsKept: 1000))
    package let blobs: BlobStore?
    package let engine: TransferEngine
    let layout: DataLayout
    package let allowedRoots: AllowedRoots
    /// Sessions' settings and cookie jars in the engine.
    let engineSessions: EngineSessions
    package let limits: Limits
    let logger: Logger
    /// Signs resume data (see `ResumeData`).
    let resumeKey: [UInt8]
    /// Timers of the service (long-poll deadlines), on a loop of their own.
    package let clock: EventLoop
    /// Blocking file work (fsync, rename, hashing) happens here, never on an event loop.
    package let fileWork = DispatchQueue(label: "transferd.files", attributes: .concurrent)
    /// Finished files of durable sessions, made durable a group at a time.
    let outputCommitter = OutputCommitter()
    /// Running tasks' reported changes, stored a moment later, together.
    let pendingChanges = PendingChangeFlush<(TaskEntry, SessionState)>()
    /// Long-polls in progress, answered early at shutdown (`endWaits`).
    let openWaits = OpenWaits()
    /// What `/metrics` shows of tasks, transfers and webhooks.
    package let metrics: ServiceMetrics
    /// Cluster mode: the store is shared with other replicas, each holding some of the sessions
    /// (see `TaskCoordinator+Cluster`). Set before the service starts.
    package var sharesStore = false
    /// Cluster mode: sessions other replicas hold, as their event readers here see them.
    let views = SessionViews()
    /// Cluster mode: serialises taking sessions over (`adopt`).
    let adoptions = Lock()
    /// Cluster mode: whether copies of other replicas' completed tasks are kept (`trustCopies`).
    let copiesTrusted = Locked(false)

    package struct Limits: Sendable {
        /// Largest response body a data task may keep.
        var maxDataBodyBytes: Int64 = 64 << 20
        /// Longest `?wait=` a client may ask for.
        package var maxWaitSeconds: Double = 600
        /// Delays before each webhook attempt (the first is immediate); when they run out the
        /// delegate is disabled: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h.
        var webhookSchedule: [Double] = [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
        /// What a download computes when it does not say (`--default-digests`).
        var defaultDigests: [DigestAlgorithm] = DigestAlgorithm.defaults

        package init(maxDataBodyBytes: Int64 = 64 << 20, maxWaitSeconds: Double = 600, webhookSchedule: [Double] = [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400],
                     defaultDigests: [DigestAlgorithm] = DigestAlgorithm.defaults)
        {
            self.maxDataBodyBytes = maxDataBodyBytes
            self.maxWaitSeconds = maxWaitSeconds
            self.webhookSchedule = webhookSchedule
            self.defaultDigests = defaultDigests
        }
    }

    package init(store: any TransferStore, blobs: BlobStore?, engine: TransferEngine, layout: DataLayout, allowedRoots: AllowedRoots,
         limits: Limits, resumeKey: [UInt8], logger: Logger, metrics: ServiceMetrics = ServiceMetrics())
    {
        self.resumeKey = resumeKey
        self.metrics = metrics
        self.store = store
        self.blobs = blobs
        self.engine = engine
        self.layout = layout
        self.allowedRoots = allowedRoots
        engineSessions = EngineSessions(engine: engine, store: store, roots: allowedRoots, logger: logger)
        self.limits = limits
        self.logger = logger
        clock = EventLoop(name: "service-timers")
        clock.start()
    }

    /// Answers every long-poll now with what there is (and any new one at once): the first step
    /// of a shutdown, so their clients get an answer before connections close.
    package func endWaits() { openWaits.end() }

    package func shutdown() {
        interruptDefaultTasksAtRest()
        // Webhook bookkeeping waiting for its batch is stored while the store is still open.
        for session in registry.all { session.locked { session.channel }?.saveNow() }
        clock.stopAndJoin()
    }

    // MARK: persistence

    /// The store that keeps `session`: its mode decides.
    func store(of session: SessionState) -> any TransferStore {
        session.mode.isDurable ? store : ephemeralStore
    }

    /// The stores, for what concerns every session (retention).
    var stores: [any TransferStore] { [store, ephemeralStore] }

    /// Commits `changes` to the session's store, with `events` journaled in the same batch, then
    /// `then`; the events reach listeners once committed. Events a running transfer of `entry`
    /// reported and that were not stored yet go first: they are taken where they are numbered,
    /// so a flush and a completion cannot swap them.
    func persist(_ session: SessionState, events drafts: [EventDraft] = [], reportedBy entry: TaskEntry? = nil,
                 _ changes: [StoreChange], then: @escaping @Sendable (Result<CommitReport, Error>) -> Void)
    {
        let store = store(of: session)
        // A session whose lease was lost writes nothing more, whoever asks.
        if session.locked({ session.released }) { return then(.failure(StoreError.fenced(session: session.identifier))) }
        // Numbering and queueing together, so seqs reach the store in order; it commits and
        // answers in that order.
        session.feed.serially {
            let (events, reported, endingBusy) = journal(drafts, reportedBy: entry, in: session)
            let seqs = events.first.map { $0.seq...events[events.count - 1].seq }
            store.commit(events.isEmpty ? changes : changes + [.insertEvents(events)]) { [logger] result in
                switch result {
                case .success:
                    if let seqs { session.locked { session.numbering.stored(seqs) } }
                    session.feed.publish(events)
                case .failure(let error):
                    // Nothing of the batch was stored, so nothing of it stays in memory either: its
                    // seqs are given back (no gap is left), the events the transfer reported go
                    // back to wait for the next commit, and the busy period it ended goes on.
                    session.locked {
                        if let seqs { session.numbering.refused(seqs) }
                        entry?.returnPendingEvents(reported)
                        session.busyTasksEnding -= endingBusy
                    }
                    // Every failed commit, whoever asked for it, gets its line: the store is where
                    // an operator must look first.
                    var metadata: Logger.Metadata = ["session": .string(session.identifier), "error": "\(error)",
                                                     "changes": .stringConvertible(changes.count)]
                    if let entry { metadata["task"] = .string(session.locked { entry.record.id }) }
                    logger.error("store error", metadata: metadata)
                }
                then(result)
            }
        }
    }

    /// Numbers the drafts in the session's sequence (called inside `feed.serially`). The end of a
    /// busy period (`session.all_tasks_finished`, urlSessionDidFinishEvents) is decided here, in
    /// seq order: of several tasks completing at once, the one numbered last ends it. Also returns
    /// what a refused commit undoes: the events taken from `entry`, and the busy tasks counted
    /// as ending.
    private func journal(_ drafts: [EventDraft], reportedBy entry: TaskEntry?, in session: SessionState)
        -> (events: [Event], reported: [EventDraft], endingBusy: Int)
    {
        let now = Timestamp.now()
        return session.locked {
            let reported = entry?.takePendingEvents() ?? []
            let all = reported + drafts
            guard !all.isEmpty else { return ([], [], 0) }
            var events: [Event] = []
            func append(_ draft: EventDraft) {
                events.append(Event(id: Event.newID(at: now), seq: session.numbering.take(), session: session.identifier, type: draft.type,
                                    task: draft.task, at: now, data: draft.data))
            }
            var endingBusy = 0
            for draft in all {
                append(draft)
                guard draft.endsBusyTask else { continue }
                session.busyTasksEnding += 1
                endingBusy += 1
                if session.busyCount <= session.busyTasksEnding { append(EventDraft(.sessionAllTasksFinished, task: nil)) }
            }
            return (events, reported, endingBusy)
        }
    }

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
        persist(session, events: events(api), reportedBy: entry, [update] + also) { [self] result in
            // A completion the store could not take (the database down, the disk full) is not
            // one: shown in memory, it would be answered as completed, then dropped from memory
            // and read back from the store as running. It is committed again until it is stored.
            // A refusal of the store's own (`StoreError`: closed, fenced — the lease went to a
            // replica that runs the task from what the store has — or rejected) is final.
            if case .failure(let error) = result, record.isCompleted, !(error is StoreError) {
                return clock.execute { [self] in
                    clock.scheduleTimer(at: MonotonicClock.after(seconds: TaskCoordinator.completionRetryDelay)) { [self] in
                        commit(record, of: entry, in: session, events: events, endsBusy: endsBusy, also: also, then: then)
                    }
                }
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
        checkInvalidation(session)
        // The session's last running task is done: what its burst allocated is free now.
        if quiet { heapTrimmer.request() }
    }

    // MARK: lookups

    package func session(_ identifier: String) throws(Refusal) -> SessionState {
        guard let session = registry.session(identifier) else { throw Refusal.notFound("session \(identifier)") }
        return session
    }

    /// The in-memory entry of a task that has not completed (every such task is in memory).
    func liveEntry(_ session: SessionState, _ id: String) -> TaskEntry? {
        session.locked { session.tasks[id].flatMap { $0.lifecycle.isDeleted ? nil : $0 } }
    }
}
