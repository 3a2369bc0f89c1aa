import Glibc
import Lifecycles

extension TaskCoordinator {
    /// Start-up: sessions and unfinished tasks come back from the store (completed tasks stay on
    /// disk until asked for), and each unfinished task is treated as its session's mode says:
    /// a background task continues, a default one completes with `interrupted`.
    func recover() throws {
        guard let store else { return }
        let recoveryStarted = Timestamp.now()
        let rows = try store.loadSessions()
        let summaries = try store.loadSessionSummaries(rows.map(\.identifier))
        for row in rows {
            guard let mode = SessionMode(rawValue: row.mode),
                  let json = try? JSONParser.parse(Array(row.configuration.utf8)),
                  let configuration = try? SessionConfiguration.parse(json)
            else {
                logger.error("skipping a stored session that no longer validates", metadata: ["session": .string(row.identifier)])
                continue
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
            if let summary = summaries[row.identifier] {
                session.counts = summary.counts
                session.nextSequence = summary.maxSequence + 1
            }
            registry.insert(session)
            restoreEngine(session)
        }
        var toStart: [(TaskEntry, SessionState)] = []
        var toEnd: [(TaskEntry, SessionState, TaskError)] = []
        for record in try store.loadUnfinishedTasks() {
            guard let session = registry.session(record.session) else { continue }
            let entry = TaskEntry(record: record)
            session.locked { session.addTask(entry) }
            switch (session.mode, record.state) {
            case (_, .canceling):
                toEnd.append((entry, session, TaskError(code: .cancelled, message: "the task was cancelled")))
            case (.background, .running):
                toStart.append((entry, session))
            case (.default, _):
                toEnd.append((entry, session, TaskError(code: .interrupted, message: "transferd stopped while the task was unfinished")))
            default:
                break
            }
        }
        for (entry, session, error) in toEnd {
            // An interrupted download leaves resume data where it can be continued.
            var ending = error
            if error.code == .interrupted {
                ending.resumeData = settlePartialOutput(of: entry.record, session: session)
            } else {
                discardPartialOutput(of: entry.record, session: session)
            }
            complete(entry, in: session, error: ending)
        }
        let now = Timestamp.now()
        for (entry, session) in toStart {
            // A task that was waiting to retry keeps its `next_attempt_at`.
            if entry.record.phase == .retrying, let next = entry.record.nextAttemptAt, next > now {
                startLater(entry, in: session, after: next.seconds - now.seconds, waitingIn: .retrying)
            } else {
                startTransfer(entry, in: session)
            }
        }
        for session in registry.all {
            checkInvalidation(session)
            removeIfSettled(session)
            // Deliveries that were due continue: the channel starts from what was delivered.
            updateDelegateChannel(session)
        }
        sweepOrphanDirectories()
        // Anything the earlier run left behind; a margin for coarse file-system clocks keeps
        // what this start-up just renamed (partials kept for resume data) out of it.
        sweepOrphanFiles(startedAt: recoveryStarted.adding(seconds: -0.5))
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
