import TransferEngine

/// Where sessions, tasks, events, webhook attempts, blobs' records and cookies are kept. The
/// core sees only this: writes are batches of `StoreChange` values, committed atomically and
/// answered in the order they were submitted; reads are typed queries of the last committed state.
/// An implementation is free in how it groups batches into transactions (the SQLite one commits
/// many in one fsync), as long as each batch stands or falls alone.
protocol TransferStore: AnyObject, Sendable {
    /// Queues `changes` as one batch; `completion` runs once it is committed (or failed, with
    /// nothing of it stored), in submission order, off the caller's thread. It must be quick.
    func commit(_ changes: [StoreChange], completion: @escaping @Sendable (Result<CommitReport, Error>) -> Void)

    /// Commits what is queued and stops taking batches (later ones fail).
    func close()
    /// Whether the store answers reads (for readiness).
    func isReadable() -> Bool

    // MARK: sessions

    /// Every session, with its marks and the seq of its newest event.
    func loadSessions() throws -> [StoredSession]
    /// Per session: task counts by state and the highest task sequence.
    func loadSessionSummaries(_ sessions: [String]) throws -> [String: SessionSummary]

    // MARK: tasks

    /// Tasks not completed, across sessions: what start-up brings back into memory.
    func loadUnfinishedTasks() throws -> [TaskRecord]
    func loadTask(session: String, id: String) throws -> TaskRecord?
    /// Whether a task of this id is stored, without loading it.
    func taskExists(session: String, id: String) throws -> Bool
    /// A page of a session's tasks in sequence order after the cursor, optionally filtered.
    func listTasks(session: String, after: Int64, state: TaskState?, kind: TaskKind?, limit: Int) throws -> [TaskRecord]
    /// Completed tasks whose completion is older than `cutoff`, oldest first.
    func completedBefore(_ cutoff: Timestamp, limit: Int) throws -> [TaskRecord]

    // MARK: events and deliveries

    /// A session's events after `seq`, in seq order.
    func events(session: String, after seq: Int64, limit: Int) throws -> [Event]
    func event(session: String, id: String) throws -> Event?
    /// A session's webhook attempts in the order they were recorded, after `position`; each comes
    /// with its position (increasing, assigned by the store), the cursor for the next page.
    func attempts(session: String, after position: Int64, limit: Int) throws -> [(position: Int64, attempt: DeliveryAttempt)]

    // MARK: blobs and cookies

    func blob(_ id: String) throws -> Blob?
    /// Client blobs (no owner) created before `cutoff`, oldest first.
    func expiredBlobs(before cutoff: Timestamp, limit: Int) throws -> [String]
    /// A session's cookies that have not expired.
    func loadCookies(session: String) throws -> [Cookie]
}

/// What a committed batch reports back.
struct CommitReport: Sendable {
    /// Blobs whose records `deleteSession` removed: their files are the caller's to remove.
    var removedBlobs: [String] = []
}

/// Failures a store reports as such; an implementation may also fail with errors of its own (an
/// I/O error), which the core treats as the store failing.
enum StoreError: Error, Sendable {
    /// `insertTasks` met a stored task with the same id or idempotency key in the session: this one.
    case conflict(existing: TaskRecord)
    /// A change the store's own rules refuse (an event or blob id taken, a task sequence reused):
    /// a mistake of the caller's, never a client's.
    case rejected(String)
    /// The store is closed.
    case closed
}

/// A session's tasks at a glance, for start-up.
struct SessionSummary: Sendable, Equatable {
    var counts: [TaskState: Int]
    var maxSequence: Int64
}

/// A session as stored.
struct StoredSession: Sendable, Equatable {
    var identifier: String
    var mode: String
    /// The configuration as the client gave it, JSON (credentials included).
    var configuration: String
    var delegate: String?
    var lifecycle: String
    var invalidateMode: String?
    var createdAt: Int64
    /// Read back only (written by `setAcked`, `setDelivered` and `insertEvents`).
    var ackedThrough: Int64 = 0
    var deliveredThrough: Int64 = 0
    var lastEventSeq: Int64 = 0
}

/// One webhook attempt.
struct DeliveryAttempt: Sendable, Equatable {
    let session: String
    let event: String
    let seq: Int64
    let attempt: Int
    let at: Timestamp
    let status: Int?
    let error: String?
    let nextAttemptAt: Timestamp?
}
