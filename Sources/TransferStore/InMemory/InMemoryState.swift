import TransferModel
import TransferVocabulary

/// Everything an `InMemoryTransferStore` holds, as one value, so that a batch can be applied to a
/// copy kept only if every change succeeded (see `commit`, which avoids the copy where it can).
struct InMemoryState {
    /// What a session owns, kept apart from its row: as in the SQLite schema, tasks and events
    /// do not require the row to exist.
    struct SessionData {
        var tasks: [String: TaskRecord] = [:]
        /// Idempotency key → task id.
        var keys: [String: String] = [:]
        var sequences: Set<Int64> = []
        /// In seq order.
        var events: [Event] = []
        /// The highest seq journaled, kept when its event is trimmed: numbering continues after it.
        var lastEventSeq: Int64 = 0
        var cookies: [Cookie] = []
        /// Webhook attempts in the order recorded, each with its position.
        var attempts: [(position: Int64, attempt: DeliveryAttempt)] = []

        mutating func add(_ task: TaskRecord) {
            tasks[task.id] = task
            sequences.insert(task.sequence)
            if let key = task.idempotencyKey { keys[key] = task.id }
        }

        /// Adds an event in seq order (in place: the journal is not copied).
        mutating func journal(_ event: Event) {
            lastEventSeq = max(lastEventSeq, event.seq)
            events.insert(event, at: InMemoryState.position(after: event.seq, in: events))
        }
    }

    let options: InMemoryTransferStore.Options
    var rows: [String: StoredSession] = [:]
    var sessions: [String: SessionData] = [:]
    var eventIDs: Set<String> = []
    /// The position of the latest attempt recorded, in any session.
    var lastPosition: Int64 = 0
    var blobs: [String: Blob] = [:]
    /// Replies kept for `Idempotency-Key`, by scope.
    var replies: [String: StoredReply] = [:]

    init(options: InMemoryTransferStore.Options) {
        self.options = options
    }

    /// Applies one change that `check` passed.
    mutating func apply(_ change: StoreChange, to report: inout CommitReport) {
        switch change {
        case .upsertSession(let row):
            var stored = rows[row.identifier] ?? StoredSession(identifier: row.identifier, mode: "", configuration: "",
                                                                lifecycle: "", createdAt: row.createdAt)
            stored.mode = row.mode
            stored.configuration = row.configuration
            stored.delegate = row.delegate
            stored.lifecycle = row.lifecycle
            stored.invalidateMode = row.invalidateMode
            rows[row.identifier] = stored
            trimAcknowledgedEvents(of: row.identifier)
        case .deleteSession(let identifier):
            report.removedBlobs += deleteSession(identifier)
        case .insertTasks(let tasks, _):
            for task in tasks { sessions[task.session, default: SessionData()].add(task) }
        case .updateTask(let task, _):
            guard sessions[task.session]?.tasks[task.id] != nil else { return }
            sessions[task.session]!.tasks[task.id] = task
        case .updateTaskKeepingState(let task, _):
            guard let stored = sessions[task.session]?.tasks[task.id], !stored.isCompleted else { return }
            var kept = task
            kept.state = stored.state
            sessions[task.session]!.tasks[task.id] = kept
        case .updateState(let session, let id, let state, let phase):
            guard let stored = sessions[session]?.tasks[id], !stored.isCompleted else { return }
            sessions[session]!.tasks[id]!.state = state
            sessions[session]!.tasks[id]!.phase = phase
        case .updateDetails(let session, let id, let priority, let description):
            guard sessions[session]?.tasks[id] != nil else { return }
            sessions[session]!.tasks[id]!.priority = priority
            sessions[session]!.tasks[id]!.description = description
        case .flushProgress(let rows):
            for row in rows where sessions[row.session]?.tasks[row.id]?.state == .running {
                let p = row.progress
                sessions[row.session]!.tasks[row.id]!.progress.bytesReceived = p.bytesReceived
                sessions[row.session]!.tasks[row.id]!.progress.bytesExpectedToReceive = p.bytesExpectedToReceive
                sessions[row.session]!.tasks[row.id]!.progress.bytesSent = p.bytesSent
                sessions[row.session]!.tasks[row.id]!.progress.bytesExpectedToSend = p.bytesExpectedToSend
            }
        case .deleteTask(let session, let id):
            guard let removed = sessions[session]?.tasks.removeValue(forKey: id) else { return }
            if let key = removed.idempotencyKey { sessions[session]!.keys[key] = nil }
            sessions[session]!.sequences.remove(removed.sequence)
        case .insertEvents(let events):
            for event in events {
                eventIDs.insert(event.id)
                sessions[event.session, default: SessionData()].journal(event)
            }
        case .recordAttempts(let attempts):
            record(attempts)
        case .setDelivered(let session, let seq):
            guard let row = rows[session] else { return }
            rows[session]!.deliveredThrough = max(row.deliveredThrough, seq)
            trimAcknowledgedEvents(of: session)
        case .setAcked(let session, let seq):
            guard let row = rows[session] else { return }
            rows[session]!.ackedThrough = max(row.ackedThrough, seq)
            trimAcknowledgedEvents(of: session)
        case .deleteEventsOlder(let cutoff, let limit):
            deleteEvents(olderThan: cutoff, limit: limit)
        case .insertBlob(let blob):
            blobs[blob.id] = blob
        case .deleteBlob(let id):
            blobs[id] = nil
        case .replaceCookies(let session, let cookies):
            guard rows[session] != nil else { return }
            sessions[session, default: SessionData()].cookies = cookies
        case .keepReply(let reply, let now):
            replies = replies.filter { $0.value.expiresAt > now }
            replies[reply.scope] = reply
        }
    }

    private mutating func deleteSession(_ identifier: String) -> [String] {
        if let removed = sessions.removeValue(forKey: identifier) {
            for event in removed.events { eventIDs.remove(event.id) }
        }
        rows[identifier] = nil
        let owned = blobs.values.filter { $0.owner?.hasPrefix(identifier + "/") ?? false }.map(\.id)
        for id in owned { blobs[id] = nil }
        return owned
    }

    /// As the SQLite store does: the oldest first, session by session, keeping each one's newest.
    private mutating func deleteEvents(olderThan cutoff: Timestamp, limit: Int) {
        var budget = limit
        for identifier in sessions.keys.sorted() where budget > 0 {
            let events = sessions[identifier]!.events
            let old = min(budget, events.prefix { $0.at < cutoff }.count, max(0, events.count - 1))
            guard old > 0 else { continue }
            for event in events.prefix(old) { eventIDs.remove(event.id) }
            sessions[identifier]!.events.removeFirst(old)
            budget -= old
        }
        for identifier in sessions.keys { sessions[identifier]!.attempts.removeAll { $0.attempt.at < cutoff } }
    }

    /// Where the events after `seq` begin in a journal in seq order.
    static func position(after seq: Int64, in events: [Event]) -> Int {
        var low = 0, high = events.count
        while low < high {
            let middle = (low + high) / 2
            if events[middle].seq <= seq { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Appends attempts to their sessions' lists, each session keeping its most recent
    /// `options.attemptsKept` when that is set.
    private mutating func record(_ attempts: [DeliveryAttempt]) {
        for attempt in attempts {
            lastPosition += 1
            sessions[attempt.session, default: SessionData()].attempts.append((lastPosition, attempt))
        }
        guard let kept = options.attemptsKept else { return }
        for identifier in Set(attempts.map(\.session)) {
            let excess = sessions[identifier]!.attempts.count - kept
            if excess > 0 { sessions[identifier]!.attempts.removeFirst(excess) }
        }
    }

    /// With `options.trimsAcknowledgedEvents`, drops the session's events nobody needs any more:
    /// those acknowledged and — while an enabled delegate still has to be sent them — delivered.
    private mutating func trimAcknowledgedEvents(of identifier: String) {
        guard options.trimsAcknowledgedEvents, let row = rows[identifier], let events = sessions[identifier]?.events else { return }
        let pushing = row.delegate.flatMap(Delegate.init(stored:)).map { !$0.disabled } ?? false
        let through = pushing ? min(row.ackedThrough, row.deliveredThrough) : row.ackedThrough
        let trimmed = events.prefix { $0.seq <= through }.count
        guard trimmed > 0 else { return }
        for event in events.prefix(trimmed) { eventIDs.remove(event.id) }
        sessions[identifier]!.events.removeFirst(trimmed)
    }
}
