import Glibc
import JSON
import Lifecycles
import Logging
import Reactor
import TransferModel
import TransferStore

/// Sessions and their unfinished tasks brought back from the store: at start-up, and in cluster
/// mode when this replica takes sessions over; and, at shutdown, a default session's tasks at rest
/// completed. The engine's side of each session is set up by the caller (`EngineSessions`).
struct SessionRecovery: Sendable {
    let journal: TaskJournal
    let runner: TaskRunner
    let deliveries: Deliveries
    /// Cluster mode: serialises taking sessions over (`adopt`).
    let adoptions = Lock()

    private var store: any TransferStore { journal.store }
    private var registry: SessionRegistry { journal.registry }
    private var files: TaskFiles { runner.files }
    private var retirement: SessionRetirement { runner.retirement }
    private var layout: DataLayout { runner.files.layout }
    private var time: any ServiceClock { journal.clock }
    private var logger: Logger { journal.logger }

    /// This replica took the leases of `identifiers`: they come into memory as at a start-up, their
    /// background tasks continuing from their partial files (Range) and their deliveries from what
    /// was delivered. A session already in memory is left as it is. Returns those adopted.
    /// One adoption at a time: the claiming round and a request's look-up may both come to adopt
    /// the same session, and two copies of it in memory would run each task twice.
    @discardableResult
    func adopt(_ identifiers: [String], setup: EngineSessions) throws -> [String] {
        try adoptions.withLock { try adoptOnce(identifiers, setup: setup) }
    }

    private func adoptOnce(_ identifiers: [String], setup: EngineSessions) throws -> [String] {
        let wanted = Set(identifiers.filter { registry.session($0) == nil })
        guard !wanted.isEmpty else { return [] }
        var rows = try store.loadSessions().filter { wanted.contains($0.identifier) }
        // An ephemeral session lived only in its holder's memory: with the holder gone, so is
        // it, as after a restart. Its announcement goes too.
        let orphans = rows.filter { SessionMode(rawValue: $0.mode)?.isDurable == false }.map(\.identifier)
        if !orphans.isEmpty {
            store.commit(orphans.map { .deleteSession($0) }) { _ in }
            rows.removeAll { orphans.contains($0.identifier) }
        }
        guard !rows.isEmpty else { return [] }
        let summaries = try store.loadSessionSummaries(rows.map(\.identifier))
        let tasks = try store.loadUnfinishedTasks().filter { wanted.contains($0.session) }
        restore(rows, summaries: summaries, tasks: tasks, setup: setup)
        for row in rows { logger.info("session taken over", metadata: ["session": .string(row.identifier)]) }
        return rows.map(\.identifier)
    }

    /// Start-up: sessions and unfinished tasks come back from the store (completed tasks stay on
    /// disk until asked for), and each unfinished task is treated as its session's mode says:
    /// a background task continues, a default one completes with `interrupted`.
    func recover(setup: EngineSessions) throws {
        let recoveryStarted = time.now()
        let rows = try store.loadSessions()
        restore(rows, summaries: try store.loadSessionSummaries(rows.map(\.identifier)), tasks: try store.loadUnfinishedTasks(), setup: setup)
        sweepOrphanDirectories()
        // Anything the earlier run left behind; a margin for coarse file-system clocks keeps
        // what this start-up just renamed (partials kept for resume data) out of it.
        files.sweepOrphanFiles(startedAt: recoveryStarted.adding(seconds: -0.5))
    }

    /// Brings stored sessions and their unfinished tasks into memory — at start-up, or in cluster
    /// mode when this replica takes sessions over — and treats each task as its session's mode
    /// says: a background task continues, a default one completes with `interrupted`.
    func restore(_ rows: [StoredSession], summaries: [String: SessionSummary], tasks: [TaskRecord], setup: EngineSessions) {
        var restored: [SessionState] = []
        for row in rows {
            guard let session = SessionState.restoring(row, summary: summaries[row.identifier], at: time.now(), logger: logger) else { continue }
            registry.insert(session)
            setup.restore(session)
            restored.append(session)
        }
        // Tasks that end are completed before any other starts, so a start-up's completions are
        // journaled first.
        var toEnd: [(TaskEntry, SessionState, [TaskLifecycle.Action])] = []
        var toStart: [(TaskEntry, SessionState, [TaskLifecycle.Action])] = []
        let now = time.now()
        let wanted = Set(restored.map(\.identifier))
        for record in tasks where wanted.contains(record.session) {
            guard let session = registry.session(record.session) else { continue }
            // A task that was waiting to retry keeps its `next_attempt_at`.
            let retryDueIn = record.nextAttemptAt.map { $0.seconds - now.seconds }
            let entry = TaskEntry(record: record, lifecycle: TaskLifecycle(restoring: record.state, phase: record.phase,
                                                                           attempts: record.metrics.attempts, retryDueIn: retryDueIn))
            // A resumable upload with an upload resource goes on with a HEAD, safe to send again.
            let next = record.uploadState?.nextRequest.method ?? record.method
            let actions = session.locked {
                session.addTask(entry)
                return runner.step(entry, .processRestarted(mode: session.mode,
                                                     retriesSentRequest: session.configuration.retry.retries(next)))
            }
            let ends = actions.contains { if case .complete = $0 { true } else { false } }
            if ends { toEnd.append((entry, session, actions)) } else { toStart.append((entry, session, actions)) }
        }
        // An interrupted download leaves resume data where it can be continued.
        let interrupted = TaskError(code: .interrupted, message: "transferd stopped while the task was unfinished")
        for (entry, session, actions) in toEnd + toStart {
            runner.perform(actions, of: entry, in: session, ending: SessionRecovery.restartEnding(of: entry.record, in: session, interrupted))
        }
        for session in restored {
            retirement.checkInvalidation(session)
            retirement.removeIfSettled(session)
            // Deliveries that were due continue: the channel starts from what was delivered.
            deliveries.updateDelegateChannel(session)
        }
    }

    /// Why a restart ends a task: a background one only when its request may have reached the
    /// origin with a method the session does not send twice.
    static func restartEnding(of record: TaskRecord, in session: SessionState, _ interrupted: TaskError) -> TaskError {
        guard session.mode == .background else { return interrupted }
        return TaskError(code: .interrupted, message: "transferd stopped while the \(record.method) request may have reached the "
                         + "origin; it is not sent again (retry.methods does not list \(record.method))")
    }

    /// Shutdown, once transfers stopped: a default session's tasks do not outlive the process, so
    /// those at rest — suspended, or waiting for a retry or their `begin_at` — complete
    /// `interrupted` now (with resume data where a partial file allows), as the running ones did
    /// when their transfers stopped, instead of at the next start.
    func interruptDefaultTasksAtRest() {
        let interrupted = TaskError(code: .interrupted, message: "transferd shut down while the task was unfinished")
        for session in registry.all where session.mode == .default {
            let settled = session.locked {
                session.tasks.values.filter(\.lifecycle.isAtRest).map { ($0, runner.step($0, .processStopping)) }
            }
            for (entry, actions) in settled { runner.perform(actions, of: entry, in: session, ending: interrupted) }
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
