import TransferEngine
import TransferModel

/// Everything an `InMemoryTransferStore` holds, as one value: a batch is applied to a copy and
/// the copy kept only if every change succeeded, which is what makes a batch atomic.
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
        var cookies: [Cookie] = []
    }

    var rows: [String: StoredSession] = [:]
    var sessions: [String: SessionData] = [:]
    var eventIDs: Set<String> = []
    /// In the order recorded, each with its position.
    var attempts: [(position: Int64, attempt: DeliveryAttempt)] = []
    var lastPosition: Int64 = 0
    var blobs: [String: Blob] = [:]

    mutating func apply(_ change: StoreChange, to report: inout CommitReport) throws {
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
        case .deleteSession(let identifier):
            report.removedBlobs += deleteSession(identifier)
        case .insertTasks(let tasks, _):
            try insert(tasks)
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
            try insert(events)
        case .recordAttempts(let attempts):
            for attempt in attempts {
                lastPosition += 1
                self.attempts.append((lastPosition, attempt))
            }
        case .setDelivered(let session, let seq):
            guard let row = rows[session] else { return }
            rows[session]!.deliveredThrough = max(row.deliveredThrough, seq)
        case .setAcked(let session, let seq):
            guard let row = rows[session] else { return }
            rows[session]!.ackedThrough = max(row.ackedThrough, seq)
        case .deleteEventsOlder(let cutoff, let limit):
            deleteEvents(olderThan: cutoff, limit: limit)
        case .insertBlob(let blob):
            guard blobs[blob.id] == nil else { throw StoreError.rejected("blob \(blob.id) exists") }
            blobs[blob.id] = blob
        case .deleteBlob(let id):
            blobs[id] = nil
        case .replaceCookies(let session, let cookies):
            guard rows[session] != nil else { return }
            sessions[session, default: SessionData()].cookies = cookies
        }
    }

    private mutating func insert(_ tasks: [TaskRecord]) throws {
        // Checked against the stored tasks before any is added, so a clash is reported with the
        // stored task, as a store that inserts and undoes would find it.
        for task in tasks {
            let stored = sessions[task.session]
            if let existing = stored?.tasks[task.id] ?? task.idempotencyKey.flatMap({ stored?.keys[$0] }).flatMap({ stored?.tasks[$0] }) {
                throw StoreError.conflict(existing: existing)
            }
        }
        for task in tasks {
            var session = sessions[task.session] ?? SessionData()
            guard session.tasks[task.id] == nil, !session.sequences.contains(task.sequence),
                  task.idempotencyKey.map({ session.keys[$0] == nil }) ?? true
            else { throw StoreError.rejected("task \(task.session)/\(task.id) clashes with another of its batch") }
            session.tasks[task.id] = task
            session.sequences.insert(task.sequence)
            if let key = task.idempotencyKey { session.keys[key] = task.id }
            sessions[task.session] = session
        }
    }

    private mutating func insert(_ events: [Event]) throws {
        for event in events {
            var session = sessions[event.session] ?? SessionData()
            guard !eventIDs.contains(event.id), !session.events.contains(where: { $0.seq == event.seq }) else {
                throw StoreError.rejected("event \(event.session)/\(event.seq) exists")
            }
            eventIDs.insert(event.id)
            if let last = session.events.last, last.seq > event.seq {
                session.events.insert(event, at: session.events.firstIndex { $0.seq > event.seq }!)
            } else {
                session.events.append(event)
            }
            sessions[event.session] = session
        }
    }

    private mutating func deleteSession(_ identifier: String) -> [String] {
        if let removed = sessions.removeValue(forKey: identifier) {
            for event in removed.events { eventIDs.remove(event.id) }
        }
        rows[identifier] = nil
        attempts.removeAll { $0.attempt.session == identifier }
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
        attempts.removeAll { $0.attempt.at < cutoff }
    }
}
