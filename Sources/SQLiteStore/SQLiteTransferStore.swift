import Store
import TransferModel
import TransferStore
import TransferVocabulary

/// The store on SQLite: one writer thread committing batches in groups (`StoreWriter`: one
/// transaction and one fsync for everything queued, each batch in a savepoint of its own, so a
/// failing batch rolls back alone), and a pool of read connections beside it (WAL).
package final class SQLiteTransferStore: TransferStore {
    private let writer: StoreWriter
    private let reader: StoreReader
    /// Reads for callers that must not wait (`submitRead`). WAL readers do not wait for one
    /// another or for the writer; a few at once keep the disk busy without a thread per request.
    private let readers = StoreReaders(width: 4)

    /// `observeCommit` is told how long each group commit took, in nanoseconds (for the metrics).
    package init(path: String, observeCommit: @escaping @Sendable (UInt64) -> Void = { _ in }) throws {
        let database = try StoreFile.openForWriting(path: path, migrations: Schema.migrations)
        writer = StoreWriter(database: database, observeCommit: observeCommit)
        reader = StoreReader(path: path)
    }

    package func close() { writer.close() }

    package func isAvailable() -> Bool {
        guard (try? reader.read({ try $0.scalar("SELECT 1") })) == 1 else { return false }
        // The last group failed as a whole (disk full, I/O error): unavailable until a write goes
        // through again — a probe's, so that an idle store with no traffic comes back too.
        guard writer.isFailing else { return true }
        writer.probe()
        return false
    }

    package func submitRead(_ read: @escaping @Sendable () -> Void) { readers.submit(read) }

    package func commit(_ changes: [StoreChange], completion: @escaping @Sendable (Result<CommitReport, Error>) -> Void) {
        writer.submit({ db in
            var report = CommitReport()
            var references = EventReferences(changes)
            for change in changes { try SQLiteTransferStore.apply(change, to: &report, references: &references, db) }
            return report
        }, completion: completion)
    }

    private static func apply(_ change: StoreChange, to report: inout CommitReport, references: inout EventReferences,
                              _ db: Database) throws
    {
        switch change {
        case .upsertSession(let row): try TaskSQL.insertSession(row, db)
        case .deleteSession(let identifier): report.removedBlobs += try TaskSQL.deleteSession(identifier, db)
        case .insertTasks(let tasks, let documents): try TaskSQL.insertTasks(tasks, documents: documents, db)
        case .updateTask(let task, let document):
            try TaskSQL.updateTask(task, document: document, refs: references.range(of: task), db)
            if db.changes == 0 { references.drop(task) }
        case .updateTaskKeepingState(let task, let document): try TaskSQL.updateTaskKeepingState(task, document: document, db)
        case .updateState(let session, let id, let state, let phase):
            try TaskSQL.updateState(session: session, id: id, state: state, phase: phase, db)
        case .updateDetails(let session, let id, let priority, let description):
            try TaskSQL.updateDetails(session: session, id: id, priority: priority, description: description, db)
        case .flushProgress(let rows): try TaskSQL.flushProgress(rows, db)
        case .deleteTask(let session, let id): try TaskSQL.deleteTask(session: session, id: id, db)
        case .insertEvents(let events): try EventSQL.insert(events, references: references, db)
        case .recordAttempts(let attempts): for attempt in attempts { try EventSQL.recordAttempt(attempt, db) }
        case .setDelivered(let session, let seq): try EventSQL.setDelivered(session, through: seq, db)
        case .setAcked(let session, let seq): try EventSQL.setAcked(session, through: seq, db)
        case .deleteEventsOlder(let cutoff, let limit): try EventSQL.deleteOlder(than: cutoff, limit: limit, db)
        case .insertBlob(let blob): try BlobSQL.insert(blob, db)
        case .deleteBlob(let id): try BlobSQL.delete(id, db)
        case .replaceCookies(let session, let cookies): try CookieSQL.replace(session: session, cookies, db)
        case .keepReply(let reply, let now): try ReplySQL.keep(reply, now: now, db)
        }
    }

    // MARK: reads

    package func loadSessions() throws -> [StoredSession] { try reader.read(TaskSQL.loadSessions) }

    package func loadSessionSummaries(_ sessions: [String]) throws -> [String: SessionSummary] {
        try reader.read { try TaskSQL.sessionSummaries(sessions, $0) }
    }

    package func loadUnfinishedTasks() throws -> [TaskRecord] { StoredTaskRows.decode(try reader.read(TaskSQL.unfinishedRows)) }

    package func loadTask(session: String, id: String) throws -> TaskRecord? {
        try reader.read { try TaskSQL.loadTask(session: session, id: id, $0) }
    }

    package func loadTask(session: String, idempotencyKey: String) throws -> TaskRecord? {
        try reader.read { try TaskSQL.loadTask(session: session, idempotencyKey: idempotencyKey, $0) }
    }

    package func taskExists(session: String, id: String) throws -> Bool {
        try reader.read { try TaskSQL.taskExists(session: session, id: id, $0) }
    }

    package func listTasks(session: String, after: Int64, state: TaskState?, kind: TaskKind?, limit: Int) throws -> [TaskRecord] {
        try reader.read { try TaskSQL.listTasks(session: session, after: after, state: state, kind: kind, limit: limit, $0) }
    }

    package func completedBefore(_ cutoff: Timestamp, limit: Int) throws -> [TaskRecord] {
        try reader.read { try TaskSQL.completedBefore(cutoff, limit: limit, $0) }
    }

    package func events(session: String, after seq: Int64, limit: Int) throws -> [Event] {
        try reader.read { try EventSQL.events(session, after: seq, limit: limit, $0) }
    }

    package func event(session: String, id: String) throws -> Event? {
        try reader.read { try EventSQL.event(session, id: id, $0) }
    }

    package func attempts(session: String, after position: Int64, limit: Int) throws -> [(position: Int64, attempt: DeliveryAttempt)] {
        try reader.read { try EventSQL.attempts(session, afterRow: position, limit: limit, $0) }
    }

    package func blob(_ id: String) throws -> Blob? { try reader.read { try BlobSQL.lookup(id, $0) } }

    package func reply(scope: String, now: Timestamp) throws -> StoredReply? {
        try reader.read { try ReplySQL.lookup(scope, now: now, $0) }
    }

    package func expiredBlobs(before cutoff: Timestamp, limit: Int) throws -> [String] {
        try reader.read { try BlobSQL.expired(before: cutoff, limit: limit, $0) }
    }

    package func loadCookies(session: String) throws -> [Cookie] { try reader.read { try CookieSQL.load(session: session, $0) } }
}
