import TransferModel
import TransferVocabulary

/// Where sessions, tasks, events, webhook attempts, blobs' records and cookies are kept. The
/// core sees only this: writes are batches of `StoreChange` values, committed atomically and
/// answered in the order they were submitted; reads are typed queries of the last committed state.
/// An implementation is free in how it groups batches into transactions (the SQLite one commits
/// many in one fsync), as long as each batch stands or falls alone.
package protocol TransferStore: AnyObject, Sendable {
    /// Queues `changes` as one batch; `completion` runs once it is committed (or failed, with
    /// nothing of it stored), in submission order, off the caller's thread. It must be quick.
    func commit(_ changes: [StoreChange], completion: @escaping @Sendable (Result<CommitReport, Error>) -> Void)

    /// Commits what is queued and stops taking batches (later ones fail).
    func close()
    /// Whether the store answers reads, and writes when the last ones failed (for readiness): a
    /// full disk lets every read through and refuses every change.
    func isAvailable() -> Bool
    /// Runs `read` where the store's reads may wait (its readers, `StoreReaders`), never on the
    /// caller's thread unless reading costs nothing there (memory). See `read(_:answer:)`.
    func submitRead(_ read: @escaping @Sendable () -> Void)

    // MARK: sessions

    /// Every session, with its marks and the seq of its newest event.
    func loadSessions() throws -> [StoredSession]
    /// Per session: task counts by state and the highest task sequence.
    func loadSessionSummaries(_ sessions: [String]) throws -> [String: SessionSummary]

    // MARK: tasks

    /// Tasks not completed, across sessions: what start-up brings back into memory.
    func loadUnfinishedTasks() throws -> [TaskRecord]
    func loadTask(session: String, id: String) throws -> TaskRecord?
    /// The task created with this `Idempotency-Key` in the session, if it is still stored.
    func loadTask(session: String, idempotencyKey: String) throws -> TaskRecord?
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
    /// Client blobs (no owner) created before `cutoff`, oldest first. A store that replicas share
    /// (PostgreSQL) leaves out those an unfinished task uses; alone, the caller's own tasks tell.
    func expiredBlobs(before cutoff: Timestamp, limit: Int) throws -> [String]
    /// A session's cookies that have not expired.
    func loadCookies(session: String) throws -> [Cookie]
    /// The reply kept for an `Idempotency-Key` scope, unless it expired by `now`.
    func reply(scope: String, now: Timestamp) throws -> StoredReply?
}

/// What a committed batch reports back.
package struct CommitReport: Sendable {
    /// Blobs whose records `deleteSession` removed: their files are the caller's to remove.
    package var removedBlobs: [String] = []

    package init(removedBlobs: [String] = []) {
        self.removedBlobs = removedBlobs
    }
}

/// Failures a store reports as such; an implementation may also fail with errors of its own (an
/// I/O error), which the core treats as the store failing.
package enum StoreError: Error, Sendable {
    /// `insertTasks` met a stored task with the same id or idempotency key in the session: this one.
    case conflict(existing: TaskRecord)
    /// A change the store's own rules refuse (an event or blob id taken, a task sequence reused):
    /// a mistake of the caller's, never a client's.
    case rejected(String)
    /// The store is closed.
    case closed
    /// A store of one replica among several (cluster mode) refused a batch naming a session whose
    /// lease this replica does not hold: another replica works on it now, and this one must stop
    /// writing for it. Nothing of the batch is stored.
    case fenced(session: String)
}

/// What a log line or a problem document shows of a store's failure: never the record a conflict
/// carries, whose request headers and body may hold secrets.
extension StoreError: CustomStringConvertible {
    package var description: String {
        switch self {
        case .conflict(let existing): "conflict with stored task \(existing.id)"
        case .rejected(let reason): "rejected: \(reason)"
        case .closed: "closed"
        case .fenced(let session): "fenced for session \(session)"
        }
    }
}

/// A session's tasks at a glance, for start-up.
package struct SessionSummary: Sendable, Equatable {
    package var counts: [TaskState: Int]
    package var maxSequence: Int64

    package init(counts: [TaskState: Int], maxSequence: Int64) {
        self.counts = counts
        self.maxSequence = maxSequence
    }
}

/// A session as stored.
package struct StoredSession: Sendable, Equatable {
    package var identifier: String
    package var mode: String
    /// The configuration as the client gave it, JSON (credentials included).
    package var configuration: String
    package var delegate: String?
    package var lifecycle: String
    package var invalidateMode: String?
    package var createdAt: Int64
    /// Read back only (written by `setAcked`, `setDelivered` and `insertEvents`).
    package var ackedThrough: Int64 = 0
    package var deliveredThrough: Int64 = 0
    package var lastEventSeq: Int64 = 0

    package init(identifier: String, mode: String, configuration: String, delegate: String? = nil, lifecycle: String, invalidateMode: String? = nil, createdAt: Int64, ackedThrough: Int64 = 0, deliveredThrough: Int64 = 0, lastEventSeq: Int64 = 0) {
        self.identifier = identifier
        self.mode = mode
        self.configuration = configuration
        self.delegate = delegate
        self.lifecycle = lifecycle
        self.invalidateMode = invalidateMode
        self.createdAt = createdAt
        self.ackedThrough = ackedThrough
        self.deliveredThrough = deliveredThrough
        self.lastEventSeq = lastEventSeq
    }
}
