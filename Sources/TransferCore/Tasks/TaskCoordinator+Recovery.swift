import Glibc
import JSON
import TransferModel
import Lifecycles
import TransferStore

extension TaskCoordinator {
    /// Start-up: sessions and unfinished tasks come back from the store (completed tasks stay on
    /// disk until asked for), and each unfinished task is treated as its session's mode says:
    /// a background task continues, a default one completes with `interrupted`.
    package func recover() throws {
        let recoveryStarted = Timestamp.now()
        let rows = try store.loadSessions()
        restore(rows, summaries: try store.loadSessionSummaries(rows.map(\.identifier)), tasks: try store.loadUnfinishedTasks())
        sweepOrphanDirectories()
        // Anything the earlier run left behind; a margin for coarse file-system clocks keeps
        // what this start-up just renamed (partials kept for resume data) out of it.
        sweepOrphanFiles(startedAt: recoveryStarted.adding(seconds: -0.5))
    }

    /// Brings stored sessions and their unfinished tasks into memory — at start-up, or in cluster
    /// mode when this replica takes sessions over — and treats each task as its session's mode
    /// says: a background task continues, a default one completes with `interrupted`.
    func restore(_ rows: [StoredSession], summaries: [String: SessionSummary], tasks: [TaskRecord]) {
        var restored: [SessionState] = []
        for row in rows {
            guard let session = sessionState(row, summary: summaries[row.identifier]) else { continue }
            registry.insert(session)
            engineSessions.restore(session)
            restored.append(session)
        }
        // Tasks that end are completed before any other starts, so a start-up's completions are
        // journaled first.
        var toEnd: [(TaskEntry, SessionState, [TaskLifecycle.Action])] = []
        var toStart: [(TaskEntry, SessionState, [TaskLifecycle.Action])] = []
        let now = Timestamp.now()
        let wanted = Set(restored.map(\.identifier))
        for record in tasks where wanted.contains(record.session) {
            guard let session = registry.session(record.session) else { continue }
            // A task that was waiting to retry keeps its `next_attempt_at`.
            let retryDueIn = record.nextAttemptAt.map { $0.seconds - now.seconds }
            let entry = TaskEntry(record: record, lifecycle: TaskLifecycle(restoring: record.state, phase: record.phase,
                                                                           attempts: record.metrics.attempts, retryDueIn: retryDueIn))
            let actions = session.locked {
                session.addTask(entry)
                return step(entry, .processRestarted(mode: session.mode,
                                                     retriesSentRequest: session.configuration.retry.retries(record.method)))
            }
            let ends = actions.contains { if case .complete = $0 { true } else { false } }
            if ends { toEnd.append((entry, session, actions)) } else { toStart.append((entry, session, actions)) }
        }
        // An interrupted download leaves resume data where it can be continued.
        let interrupted = TaskError(code: .interrupted, message: "transferd stopped while the task was unfinished")
        for (entry, session, actions) in toEnd + toStart {
            perform(actions, of: entry, in: session, ending: TaskCoordinator.restartEnding(of: entry.record, in: session, interrupted))
        }
        for session in restored {
            checkInvalidation(session)
            removeIfSettled(session)
            // Deliveries that were due continue: the channel starts from what was delivered.
            updateDelegateChannel(session)
        }
    }

    /// Why a restart ends a task: a background one only when its request may have reached the
    /// origin with a method the session does not send twice.
    static func restartEnding(of record: TaskRecord, in session: SessionState, _ interrupted: TaskError) -> TaskError {
        guard session.mode == .background else { return interrupted }
        return TaskError(code: .interrupted, message: "transferd stopped while the \(record.method) request may have reached the "
                         + "origin; it is not sent again (retry.methods does not list \(record.method))")
    }

    /// A stored session as a value in memory, not yet registered; nil (logged) when its stored
    /// configuration no longer validates.
    func sessionState(_ row: StoredSession, summary: SessionSummary?) -> SessionState? {
        guard let mode = SessionMode(rawValue: row.mode),
              let json = try? JSONParser.parse(Array(row.configuration.utf8)),
              let configuration = try? SessionConfiguration.parse(json)
        else {
            logger.error("skipping a stored session that no longer validates", metadata: ["session": .string(row.identifier)])
            return nil
        }
        let session = SessionState(identifier: row.identifier, mode: mode, configuration: configuration,
                                   configurationJSON: json, createdAt: Timestamp(milliseconds: row.createdAt))
        session.lifecycle = SessionLifecycle(restoring: SessionLifecycle.Status(rawValue: row.lifecycle) ?? .active,
                                             mode: row.invalidateMode.flatMap(SessionLifecycle.InvalidateMode.init(rawValue:)))
        session.delegate = row.delegate.flatMap(Delegate.init(stored:))
        if session.lifecycle.status == .invalidated { session.invalidatedAt = Timestamp.now() }
        session.nextEventSeq = row.lastEventSeq + 1
        session.ackedThrough = row.ackedThrough
        session.deliveredThrough = row.deliveredThrough
        if let summary {
            session.counts = summary.counts
            session.nextSequence = summary.maxSequence + 1
        }
        return session
    }

    /// Shutdown, once transfers stopped: a default session's tasks do not outlive the process, so
    /// those at rest — suspended, or waiting for a retry or their `begin_at` — complete
    /// `interrupted` now (with resume data where a partial file allows), as the running ones did
    /// when their transfers stopped, instead of at the next start.
    func interruptDefaultTasksAtRest() {
        let interrupted = TaskError(code: .interrupted, message: "transferd shut down while the task was unfinished")
        for session in registry.all where session.mode == .default {
            let settled = session.locked {
                session.tasks.values.filter(\.lifecycle.isAtRest).map { ($0, step($0, .processStopping)) }
            }
            for (entry, actions) in settled { perform(actions, of: entry, in: session, ending: interrupted) }
        }
    }

    /// Session directories with no stored session (ephemeral sessions of an earlier run, sessions
    /// whose removal was cut short) are removed.
    private func sweepOrphanDirectories() {
        let root = layout.root + "/sessions"
        for name in DataLayout.entries(of: root) where registry.session(name) == nil {
            DataLayout.removeTree(root + "/" + name)
        }
    }
}
