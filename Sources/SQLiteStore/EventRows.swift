import Store
import TransferModel

/// How an event's row is kept small (migration 31): its session as a number (`event_sessions`),
/// its type as a code, and of an id made by `Event.newID(at:)` only the random part — the rest is
/// `evt_` and the event's own time.
enum EventRows {
    /// Codes of the types, fixed once given (migration 31 converts with the same table): never
    /// change or reuse one.
    static let codes: [EventType: Int64] = [
        .taskCreated: 1, .taskResumed: 2, .taskSuspended: 3, .taskResponseReceived: 4, .taskRedirected: 5,
        .taskResumedAtOffset: 6, .taskProgress: 7, .taskFinishedDownloading: 8, .taskCompleted: 9,
        .sessionAllTasksFinished: 10, .sessionInvalidated: 11,
    ]
    static let types = Dictionary(uniqueKeysWithValues: codes.map { ($1, $0) })

    /// The session's number, given it on first use when `create`. Looked up first: every batch of
    /// events asks, and only a session's first one has none yet — an insert tried each time (with
    /// its conflict on the unique index) cost the writer a statement per completed task.
    static func number(of session: String, create: Bool, _ db: Database) throws -> Int64? {
        if let number = try lookUp(session, db) { return number }
        guard create else { return nil }
        try db.statement("INSERT INTO event_sessions (identifier) VALUES (?)").bind(.text(session)).run()
        return try lookUp(session, db)
    }

    private static func lookUp(_ session: String, _ db: Database) throws -> Int64? {
        let s = try db.statement("SELECT number FROM event_sessions WHERE identifier = ?")
        try s.bind(.text(session))
        defer { s.reset() }
        return try s.step() ? s.int64(0) : nil
    }

    /// What the `id` column keeps of an event's id.
    static func storedID(_ id: String, at: Timestamp) -> String {
        guard Event.time(ofID: id) == at else { return id }
        return String(id.utf8.dropFirst(Event.idPrefix.utf8.count + RandomID.timeDigits))!
    }

    /// The id back from the `id` column: 11 characters are a random part (an id kept whole is never
    /// that short: ids are `evt_` and 20 characters, or before migration 31 the same).
    static func id(stored: String, at: Timestamp) -> String {
        stored.utf8.count == RandomID.randomDigits ? Event.newID(at: at, random: stored) : stored
    }
}
