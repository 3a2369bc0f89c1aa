import TransferModel
import TransferVocabulary

/// One change to the stored state, as a value: the core hands the store a list of them (a
/// batch), and the store applies the batch atomically — all of it or, when any change fails,
/// none of it. A batch is what the core promises a client together (a task's completion with its
/// events, say), so it must never be half stored.
package enum StoreChange: Sendable {
    /// Creates the session, or replaces its configuration, delegate and lifecycle (never its
    /// creation time nor its acknowledgement marks, which have changes of their own).
    case upsertSession(StoredSession)
    /// Removes a session with everything it owns: tasks, events, attempts, cookies and its tasks'
    /// spooled bodies (whose ids come back in `CommitReport.removedBlobs`, for their files).
    case deleteSession(String)

    /// New tasks; `documents[i]` is the stored form of `tasks[i]` (encoded by the caller, off the
    /// store's writer). A task whose id or idempotency key is taken in its session fails the
    /// batch with `StoreError.conflict`.
    case insertTasks([TaskRecord], documents: [[UInt8]])
    /// A task's new record, state included (a completion).
    case updateTask(TaskRecord, document: [UInt8])
    /// What an attempt reported, but not the state, which suspend and resume decide (one may have
    /// been stored since the record was taken); and never over a completed task.
    case updateTaskKeepingState(TaskRecord, document: [UInt8])
    /// Suspend and resume: the state and phase only, never over a completed task.
    case updateState(session: String, id: String, state: TaskState, phase: TaskPhase)
    /// `PATCH`: priority and description, whatever state the stored task is in.
    case updateDetails(session: String, id: String, priority: Double, description: String?)
    /// The progress of tasks, only while the stored task still says running (a late flush must not
    /// touch a completion).
    case flushProgress([ProgressUpdate])
    case deleteTask(session: String, id: String)

    /// Journaled events, each new (session, seq) and id. A `task.completed` in the same batch as
    /// its task's completion (`updateTask` of the completed record) carries that record
    /// (`TaskRecord.eventData`): a store may keep it as a reference to the task's row.
    case insertEvents([Event])
    /// Webhook attempts, kept in the order they are recorded.
    case recordAttempts([DeliveryAttempt])
    /// Raise a session's marks (never lowered: a stale mark is ignored).
    case setDelivered(session: String, through: Int64)
    case setAcked(session: String, through: Int64)
    /// Events older than `cutoff`, at most `limit` of them, but never a session's newest (its seq
    /// is where numbering continues after a restart); and webhook attempts older than `cutoff`.
    case deleteEventsOlder(than: Timestamp, limit: Int)

    case insertBlob(Blob)
    case deleteBlob(String)

    /// A reply kept for an `Idempotency-Key` (replacing one of the same scope), and the removal of
    /// those expired by `now`, which keeps the table bounded by what a day's keys hold.
    case keepReply(StoredReply, now: Timestamp)

    /// A session's whole cookie jar — unless the session is gone (a jar written late must not
    /// outlive its session's removal).
    case replaceCookies(session: String, [Cookie])
}

/// One task's progress, for `StoreChange.flushProgress`.
package struct ProgressUpdate: Sendable {
    package let session: String
    package let id: String
    package let progress: TaskProgress

    package init(session: String, id: String, progress: TaskProgress) {
        self.session = session
        self.id = id
        self.progress = progress
    }
}

