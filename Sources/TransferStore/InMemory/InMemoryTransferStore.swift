import Dispatch
import Reactor
import TransferModel
import TransferVocabulary

/// The store in memory, with the SQLite store's semantics: for sessions whose state need not
/// survive the process (ephemeral sessions), and for testing the core without a database. A batch
/// is applied under the lock, all or nothing (`InMemoryState.commit`); completions run on a queue
/// of their own, in commit order, as the SQLite store's do.
package final class InMemoryTransferStore: TransferStore {
    /// What a store that lives only as long as the process may forget, which the SQLite store keeps.
    package struct Options: Sendable {
        /// Events acknowledged (and, while the session's delegate is enabled, delivered) are
        /// dropped: nothing reads them again.
        package var trimsAcknowledgedEvents: Bool
        /// Each session keeps its most recent this many webhook attempts; nil keeps them all.
        package var attemptsKept: Int?

        package init(trimsAcknowledgedEvents: Bool = false, attemptsKept: Int? = nil) {
            self.trimsAcknowledgedEvents = trimsAcknowledgedEvents
            self.attemptsKept = attemptsKept
        }
    }

    private let state: Locked<(value: InMemoryState, closed: Bool)>
    private let completions = DispatchQueue(label: "transferd.memory-store.completions")

    package init(options: Options = Options()) {
        state = Locked((InMemoryState(options: options), false))
    }

    package func commit(_ changes: [StoreChange], completion: @escaping @Sendable (Result<CommitReport, Error>) -> Void) {
        state.withLock { state in
            let result = Result { () throws -> CommitReport in
                guard !state.closed else { throw StoreError.closed }
                return try state.value.commit(changes)
            }
            // Queued under the lock, so completions run in commit order.
            completions.async { completion(result) }
        }
    }

    package func close() {
        state.withLock { $0.closed = true }
        completions.sync {}
    }

    package func isAvailable() -> Bool { true }

    /// Reading memory under a lock is quick: no thread is worth the hop.
    package func submitRead(_ read: @escaping @Sendable () -> Void) { read() }

    private func read<T>(_ body: (InMemoryState) throws -> T) rethrows -> T {
        try state.withLock { try body($0.value) }
    }

    // MARK: sessions

    package func loadSessions() throws -> [StoredSession] {
        read { state in
            state.rows.values.map { row in
                var row = row
                row.lastEventSeq = state.sessions[row.identifier]?.lastEventSeq ?? 0
                return row
            }
        }
    }

    package func loadSessionSummaries(_ sessions: [String]) throws -> [String: SessionSummary] {
        read { state in
            var result: [String: SessionSummary] = [:]
            for session in sessions {
                let tasks = state.sessions[session]?.tasks.values
                var counts = Dictionary(uniqueKeysWithValues: TaskState.allCases.map { ($0, 0) })
                for task in tasks ?? [:].values { counts[task.state, default: 0] += 1 }
                result[session] = SessionSummary(counts: counts, maxSequence: tasks?.map(\.sequence).max() ?? 0)
            }
            return result
        }
    }

    // MARK: tasks

    package func loadUnfinishedTasks() throws -> [TaskRecord] {
        read { $0.sessions.values.flatMap { $0.tasks.values.filter { !$0.isCompleted } } }
    }

    package func loadTask(session: String, id: String) throws -> TaskRecord? {
        read { $0.sessions[session]?.tasks[id] }
    }

    package func loadTask(session: String, idempotencyKey: String) throws -> TaskRecord? {
        read { state in state.sessions[session].flatMap { stored in stored.keys[idempotencyKey].flatMap { stored.tasks[$0] } } }
    }

    package func taskExists(session: String, id: String) throws -> Bool {
        read { $0.sessions[session]?.tasks[id] != nil }
    }

    package func listTasks(session: String, after: Int64, state: TaskState?, kind: TaskKind?, limit: Int) throws -> [TaskRecord] {
        read {
            ($0.sessions[session]?.tasks.values ?? [:].values)
                .filter { $0.sequence > after && (state == nil || $0.state == state) && (kind == nil || $0.kind == kind) }
                .sorted { $0.sequence < $1.sequence }
                .prefix(limit).map { $0 }
        }
    }

    package func completedBefore(_ cutoff: Timestamp, limit: Int) throws -> [TaskRecord] {
        read {
            $0.sessions.values.flatMap { $0.tasks.values.filter { $0.completedAt.map { $0 < cutoff } ?? false } }
                .sorted { $0.completedAt! < $1.completedAt! }
                .prefix(limit).map { $0 }
        }
    }

    // MARK: events and deliveries

    package func events(session: String, after seq: Int64, limit: Int) throws -> [Event] {
        read { state in
            let events = state.sessions[session]?.events ?? []
            let start = InMemoryState.position(after: seq, in: events)
            return Array(events[start..<min(events.count, start + limit)])
        }
    }

    package func event(session: String, id: String) throws -> Event? {
        read { $0.sessions[session]?.events.first { $0.id == id } }
    }

    package func attempts(session: String, after position: Int64, limit: Int) throws -> [(position: Int64, attempt: DeliveryAttempt)] {
        read { ($0.sessions[session]?.attempts ?? []).lazy.filter { $0.position > position }.prefix(limit).map { $0 } }
    }

    // MARK: blobs and cookies

    package func blob(_ id: String) throws -> Blob? { read { $0.blobs[id] } }

    package func reply(scope: String, now: Timestamp) throws -> StoredReply? {
        read { $0.replies[scope].flatMap { $0.expiresAt > now ? $0 : nil } }
    }

    package func expiredBlobs(before cutoff: Timestamp, limit: Int) throws -> [String] {
        read {
            $0.blobs.values.filter { $0.owner == nil && $0.createdAt < cutoff }
                .sorted { $0.createdAt < $1.createdAt }
                .prefix(limit).map(\.id)
        }
    }

    package func loadCookies(session: String) throws -> [Cookie] {
        let now = Timestamp.now().milliseconds / 1000
        return read { ($0.sessions[session]?.cookies ?? []).filter { $0.expires.map { $0 > now } ?? true } }
    }
}
