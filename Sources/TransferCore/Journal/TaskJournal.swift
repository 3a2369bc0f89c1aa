import Logging
import TransferModel
import TransferStore

/// The durable copy of sessions and tasks, and their journal: which store keeps a session, the
/// commits that number and publish its events, and the changes running transfers report, stored
/// a moment later together.
///
/// Ordering rule: a change that a reply or an event promises is committed to the store before it
/// becomes visible in memory (and before the reply), so nothing a client was told is lost by a crash.
final class TaskJournal: Sendable {
    /// Where durable sessions are kept (SQLite, in the service).
    let store: any TransferStore
    /// Where ephemeral sessions are kept: nothing of them reaches the disk, and what no one will
    /// read again goes — events acknowledged (and delivered, while a delegate waits for them),
    /// webhook attempts beyond each session's latest 1,000.
    let ephemeralStore = InMemoryTransferStore(options: InMemoryTransferStore.Options(trimsAcknowledgedEvents: true,
                                                                                      attemptsKept: 1000))
    let registry: SessionRegistry
    let clock: any ServiceClock
    let logger: Logger
    /// Running tasks' reported changes, stored a moment later, together.
    private let pendingChanges: PendingChangeFlush<(TaskEntry, SessionState)>

    init(store: any TransferStore, registry: SessionRegistry, clock: any ServiceClock, logger: Logger) {
        self.store = store
        self.registry = registry
        self.clock = clock
        self.logger = logger
        pendingChanges = PendingChangeFlush(clock: clock)
    }

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
        let now = clock.now()
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

    /// The in-memory entry of a task that has not completed (every such task is in memory).
    func liveEntry(_ session: SessionState, _ id: String) -> TaskEntry? {
        session.locked { session.tasks[id].flatMap { $0.lifecycle.isDeleted ? nil : $0 } }
    }

    /// Applies a change a running transfer reported (a response head, a redirect) to the task in
    /// memory at once; it is stored with its events a moment later (at most 0.2 s, with the other
    /// tasks' changes of that moment: `PendingChangeFlush`), or with the task's
    /// completion if that comes first — so a small download is written once, not once per head.
    func noteTransferChange(_ entry: TaskEntry, in session: SessionState, events: [EventDraft],
                            _ change: (inout TaskRecord) -> Void)
    {
        let schedule: Bool = session.locked {
            change(&entry.record)
            entry.addPendingEvents(events)
            if events.isEmpty { entry.hasPendingChange = true }
            defer { entry.pendingEventsScheduled = true }
            return !entry.pendingEventsScheduled
        }
        guard schedule else { return }
        pendingChanges.add((entry, session)) { [self] due in
            for (entry, session) in due { flushPendingEvents(of: entry, in: session) }
        }
    }

    /// Stores what `noteTransferChange` kept back, unless a completion has taken it meanwhile. The
    /// row is only updated while it still says unfinished: a late flush never undoes a completion.
    func flushPendingEvents(of entry: TaskEntry, in session: SessionState) {
        let record: TaskRecord? = session.locked {
            entry.pendingEventsScheduled = false
            defer { entry.hasPendingChange = false }
            return entry.hasPendingEvents || entry.hasPendingChange ? entry.record : nil
        }
        guard let record else { return }
        persist(session, reportedBy: entry, [.updateTaskKeepingState(record, document: record.storageDocument())]) { _ in }
    }
}

extension Refusal {
    package static func storeFailure(_ error: Error) -> Refusal {
        Refusal(.unavailable, "store_unavailable", "the store cannot be read or written now (\(error)); nothing was changed, retry shortly")
    }
}
