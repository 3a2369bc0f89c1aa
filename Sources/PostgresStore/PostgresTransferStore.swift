import Postgres
import TransferModel
import TransferStore
import TransferVocabulary

/// The store on PostgreSQL (cluster mode: many replicas on one database): one writer connection
/// committing batches in groups (`PostgresWriter`), a pool of reader connections beside it.
/// Its observable behaviour is the SQLite store's, which the conformance suite holds both to.
package final class PostgresTransferStore: TransferStore {
    /// The channel committed events are notified on, with `session:seq` of each session's newest
    /// event in the batch: LISTEN on it to wake long-polls and streams for events another replica
    /// made (`PostgresConnection.listen`, `drainNotifications`).
    package static let eventsChannel = EventStatements.channel
    /// The channel changes to stored tasks that other replicas may hold copies of are notified on,
    /// as `session/task`, or `session/` when the whole session went (`TaskChangeNotifications`).
    package static let tasksChannel = TaskChangeNotifications.channel

    private let writer: PostgresWriter
    /// For reads and the lease statements (`SessionLeases.swift`).
    let pool: ConnectionPool
    /// Reads for callers that must not wait (`submitRead`): as many at once as the pool keeps
    /// connections, so that queued reads reuse them rather than connect.
    private let readers: StoreReaders
    /// Set in cluster mode: batches are checked against this replica's leases.
    private let fence: LeaseFence?

    /// Connects, and migrates the schema (once across replicas: under an advisory lock). Fails
    /// when the database cannot be reached now; after that, the store reconnects by itself.
    /// `owner`: this replica's id in cluster mode, whose leases fence every batch (`LeaseFence`);
    /// a lease a batch takes lasts `leaseSeconds`. A statement waits at most `lockTimeoutSeconds`
    /// for a lock (`Connector`). `observeCommit` is told how long each group commit took, in
    /// nanoseconds (for the metrics).
    package init(url: String, owner: String? = nil, leaseSeconds: Double = 15, lockTimeoutSeconds: Double = 10,
                 observeCommit: @escaping @Sendable (UInt64) -> Void = { _ in }) throws
    {
        let connector = Connector(url: url, lockTimeoutSeconds: lockTimeoutSeconds)
        fence = owner.map { LeaseFence(owner: $0, ttlSeconds: leaseSeconds) }
        // Migrating waits as long as another replica migrates: on a connection without the lock timeout.
        try PostgresSchema.migrate(PostgresConnection(url: url))
        writer = PostgresWriter(connector: connector, connection: try connector.connect(), observeCommit: observeCommit)
        pool = ConnectionPool(connector: connector)
        readers = StoreReaders(width: pool.keep)
    }

    package func close() { writer.close() }

    /// False while the database cannot be reached (readiness answers 503 meanwhile).
    package func isAvailable() -> Bool {
        (try? pool.withConnection { try $0.query("SELECT 1").count }) == 1
    }

    package func submitRead(_ read: @escaping @Sendable () -> Void) { readers.submit(read) }

    package func commit(_ changes: [StoreChange], completion: @escaping @Sendable (Result<CommitReport, Error>) -> Void) {
        let fence = fence
        writer.submit({ db in
            try fence?.check(changes, db)
            var report = CommitReport()
            for change in changes { try PostgresTransferStore.apply(change, to: &report, db) }
            try TaskChangeNotifications.notify(changes, db)
            return report
        }, completion: completion)
    }

    private static func apply(_ change: StoreChange, to report: inout CommitReport, _ db: PostgresConnection) throws {
        switch change {
        case .upsertSession(let row): try TaskStatements.upsertSession(row, db)
        case .deleteSession(let identifier): report.removedBlobs += try TaskStatements.deleteSession(identifier, db)
        case .insertTasks(let tasks, let documents): try TaskStatements.insertTasks(tasks, documents: documents, db)
        case .updateTask(let task, let document): try TaskStatements.updateTask(task, document: document, db)
        case .updateTaskKeepingState(let task, let document): try TaskStatements.updateTaskKeepingState(task, document: document, db)
        case .updateState(let session, let id, let state, let phase):
            try TaskStatements.updateState(session: session, id: id, state: state, phase: phase, db)
        case .updateDetails(let session, let id, let priority, let description):
            try TaskStatements.updateDetails(session: session, id: id, priority: priority, description: description, db)
        case .flushProgress(let rows): try TaskStatements.flushProgress(rows, db)
        case .deleteTask(let session, let id): try TaskStatements.deleteTask(session: session, id: id, db)
        case .insertEvents(let events): try EventStatements.insert(events, db)
        case .recordAttempts(let attempts): try EventStatements.recordAttempts(attempts, db)
        case .setDelivered(let session, let seq): try EventStatements.setDelivered(session, through: seq, db)
        case .setAcked(let session, let seq): try EventStatements.setAcked(session, through: seq, db)
        case .deleteEventsOlder(let cutoff, let limit): try EventStatements.deleteOlder(than: cutoff, limit: limit, db)
        case .insertBlob(let blob): try RecordStatements.insertBlob(blob, db)
        case .deleteBlob(let id): try RecordStatements.deleteBlob(id, db)
        case .replaceCookies(let session, let cookies): try RecordStatements.replaceCookies(session: session, cookies, db)
        case .keepReply(let reply, let now): try RecordStatements.keepReply(reply, now: now, db)
        }
    }

    // MARK: reads

    package func loadSessions() throws -> [StoredSession] { try pool.withConnection(TaskStatements.loadSessions) }

    package func loadSessionSummaries(_ sessions: [String]) throws -> [String: SessionSummary] {
        try pool.withConnection { try TaskStatements.sessionSummaries(sessions, $0) }
    }

    package func loadUnfinishedTasks() throws -> [TaskRecord] {
        StoredTaskRows.decode(try pool.withConnection(TaskStatements.unfinishedRows))
    }

    package func loadTask(session: String, id: String) throws -> TaskRecord? {
        try pool.withConnection { try TaskStatements.loadTask(session: session, id: id, $0) }
    }

    package func loadTask(session: String, idempotencyKey: String) throws -> TaskRecord? {
        try pool.withConnection { try TaskStatements.loadTask(session: session, idempotencyKey: idempotencyKey, $0) }
    }

    package func taskExists(session: String, id: String) throws -> Bool {
        try pool.withConnection { try TaskStatements.taskExists(session: session, id: id, $0) }
    }

    package func listTasks(session: String, after: Int64, state: TaskState?, kind: TaskKind?, limit: Int) throws -> [TaskRecord] {
        try pool.withConnection { try TaskStatements.listTasks(session: session, after: after, state: state, kind: kind, limit: limit, $0) }
    }

    package func completedBefore(_ cutoff: Timestamp, limit: Int) throws -> [TaskRecord] {
        try pool.withConnection { try TaskStatements.completedBefore(cutoff, limit: limit, $0) }
    }

    package func events(session: String, after seq: Int64, limit: Int) throws -> [Event] {
        try pool.withConnection { try EventStatements.events(session, after: seq, limit: limit, $0) }
    }

    package func event(session: String, id: String) throws -> Event? {
        try pool.withConnection { try EventStatements.event(session, id: id, $0) }
    }

    package func attempts(session: String, after position: Int64, limit: Int) throws -> [(position: Int64, attempt: DeliveryAttempt)] {
        try pool.withConnection { try EventStatements.attempts(session, after: position, limit: limit, $0) }
    }

    package func blob(_ id: String) throws -> Blob? { try pool.withConnection { try RecordStatements.blob(id, $0) } }

    package func expiredBlobs(before cutoff: Timestamp, limit: Int) throws -> [String] {
        try pool.withConnection { try RecordStatements.expiredBlobs(before: cutoff, limit: limit, $0) }
    }

    package func loadCookies(session: String) throws -> [Cookie] { try pool.withConnection { try RecordStatements.cookies(session: session, $0) } }

    package func reply(scope: String, now: Timestamp) throws -> StoredReply? {
        try pool.withConnection { try RecordStatements.reply(scope: scope, now: now, $0) }
    }
}
