import JSON
import Postgres
import TransferModel
import TransferStore

/// SQL for sessions and tasks on PostgreSQL. Each change is one statement — one round trip —
/// however many rows it carries: rows travel as array parameters taken apart by `unnest`.
enum TaskStatements {
    // MARK: writes

    static func upsertSession(_ s: StoredSession, _ db: PostgresConnection) throws {
        _ = try db.query("""
            INSERT INTO sessions (identifier, mode, configuration, delegate, lifecycle, invalidate_mode, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (identifier) DO UPDATE SET mode = excluded.mode, configuration = excluded.configuration,
              delegate = excluded.delegate, lifecycle = excluded.lifecycle, invalidate_mode = excluded.invalidate_mode
            """, [s.identifier, s.mode, s.configuration, s.delegate, s.lifecycle, s.invalidateMode, String(s.createdAt)])
    }

    /// Removes a session with everything it owns, in one statement (data-modifying `WITH` parts run
    /// whether or not they are read); returns the ids of its tasks' spooled bodies.
    static func deleteSession(_ identifier: String, _ db: PostgresConnection) throws -> [String] {
        let rows = try db.query("""
            WITH e AS (DELETE FROM events WHERE session = $1), d AS (DELETE FROM deliveries WHERE session = $1),
                 c AS (DELETE FROM session_cookies WHERE session = $1), t AS (DELETE FROM tasks WHERE session = $1),
                 s AS (DELETE FROM sessions WHERE identifier = $1)
            DELETE FROM blobs WHERE starts_with(owner, $1 || '/')
            RETURNING id
            """, [identifier])
        return (0..<rows.count).map { rows.text($0, 0)! }
    }

    /// Inserts new tasks in one statement. A taken id or idempotency key (or sequence) leaves its
    /// row out instead of aborting the transaction (`ON CONFLICT DO NOTHING`); when rows are missing,
    /// the first task that collided with a stored one fails the batch with `StoreError.conflict`
    /// (and the writer's savepoint undoes the rows that went in).
    static func insertTasks(_ tasks: [TaskRecord], documents: [[UInt8]], _ db: PostgresConnection) throws {
        let rows = try db.query("""
            INSERT INTO tasks (session, id, sequence, kind, state, idempotency_key, completed_at, doc)
            SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[])
            ON CONFLICT DO NOTHING RETURNING id
            """, [PostgresText.array(tasks.map { Optional($0.session) }), PostgresText.array(tasks.map { Optional($0.id) }),
                  PostgresText.array(tasks.map { Optional($0.sequence) }), PostgresText.array(tasks.map { Optional($0.kind.rawValue) }),
                  PostgresText.array(tasks.map { Optional($0.state.rawValue) }), PostgresText.array(tasks.map(\.idempotencyKey)),
                  PostgresText.array(tasks.map { $0.completedAt?.milliseconds }),
                  PostgresText.array(utf8: documents)])
        guard rows.count < tasks.count else { return }
        let inserted = Set((0..<rows.count).map { rows.text($0, 0)! })
        for task in tasks where !inserted.contains(task.id) {
            if let existing = try existing(task, excluding: inserted, db) { throw StoreError.conflict(existing: existing) }
        }
        throw StoreError.rejected("a task's id, idempotency key or sequence is taken twice in one batch, or its sequence is reused")
    }

    /// The stored task `task` collided with — by id first, else by idempotency key — other than the
    /// rows this batch just inserted.
    private static func existing(_ task: TaskRecord, excluding inserted: Set<String>, _ db: PostgresConnection) throws -> TaskRecord? {
        let rows = try db.query("""
            SELECT \(recordColumns) FROM tasks
            WHERE session = $1 AND (id = $2 OR idempotency_key = $3) AND NOT (id = ANY($4::text[]))
            ORDER BY id = $2 DESC LIMIT 1
            """, [task.session, task.id, task.idempotencyKey, PostgresText.array(inserted.map { Optional($0) })])
        return rows.count > 0 ? decode(rows, 0) : nil
    }

    static func updateTask(_ task: TaskRecord, document: [UInt8], _ db: PostgresConnection) throws {
        _ = try db.query("UPDATE tasks SET state = $1, completed_at = $2, doc = $3 WHERE session = $4 AND id = $5",
                         [task.state.rawValue, task.completedAt.map { String($0.milliseconds) }, String(decoding: document, as: UTF8.self),
                          task.session, task.id])
    }

    /// The state is the row's column, which the document leaves out: it stays as it is.
    static func updateTaskKeepingState(_ task: TaskRecord, document: [UInt8], _ db: PostgresConnection) throws {
        _ = try db.query("UPDATE tasks SET doc = $1 WHERE session = $2 AND id = $3 AND state <> 'completed'",
                         [String(decoding: document, as: UTF8.self), task.session, task.id])
    }

    /// Only the state and phase, never over a completed row (a completion decided meanwhile wins).
    static func updateState(session: String, id: String, state: TaskState, phase: TaskPhase, _ db: PostgresConnection) throws {
        _ = try db.query("""
            UPDATE tasks SET state = $1, doc = jsonb_set(doc::jsonb, '{phase}', to_jsonb($2::text))::text
            WHERE session = $3 AND id = $4 AND state <> 'completed'
            """, [state.rawValue, phase.rawValue, session, id])
    }

    static func updateDetails(session: String, id: String, priority: Double, description: String?, _ db: PostgresConnection) throws {
        _ = try db.query("""
            UPDATE tasks SET doc = jsonb_set(jsonb_set(doc::jsonb, '{priority}', to_jsonb($1::float8)),
                                             '{description}', coalesce(to_jsonb($2::text), 'null'::jsonb))::text
            WHERE session = $3 AND id = $4
            """, [String(priority), description, session, id])
    }

    /// The progress inside the documents, only of rows that still say running, in one statement.
    static func flushProgress(_ rows: [ProgressUpdate], _ db: PostgresConnection) throws {
        _ = try db.query("""
            UPDATE tasks AS t SET doc = jsonb_set(t.doc::jsonb, '{progress}', coalesce(t.doc::jsonb -> 'progress', '{}'::jsonb)
                || jsonb_build_object('bytes_received', u.received, 'bytes_expected_to_receive', u.expected_in,
                                      'bytes_sent', u.sent, 'bytes_expected_to_send', u.expected_out))::text
            FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[])
              AS u (session, id, received, expected_in, sent, expected_out)
            WHERE t.session = u.session AND t.id = u.id AND t.state = 'running'
            """, [PostgresText.array(rows.map { Optional($0.session) }), PostgresText.array(rows.map { Optional($0.id) }),
                  PostgresText.array(rows.map { Optional($0.progress.bytesReceived) }),
                  PostgresText.array(rows.map { Optional($0.progress.bytesExpectedToReceive) }),
                  PostgresText.array(rows.map { Optional($0.progress.bytesSent) }),
                  PostgresText.array(rows.map { Optional($0.progress.bytesExpectedToSend) })])
    }

    static func deleteTask(session: String, id: String, _ db: PostgresConnection) throws {
        _ = try db.query("DELETE FROM tasks WHERE session = $1 AND id = $2", [session, id])
    }

    // MARK: reads

    /// Sessions with their marks and the seq of their newest event (one probe of the key each).
    static func loadSessions(_ db: PostgresConnection) throws -> [StoredSession] {
        let rows = try db.query("""
            SELECT identifier, mode, configuration, delegate, lifecycle, invalidate_mode, created_at, acked_through, delivered_through,
                   coalesce((SELECT max(seq) FROM events WHERE session = identifier), 0)
            FROM sessions
            """)
        return (0..<rows.count).map { i in
            StoredSession(identifier: rows.text(i, 0)!, mode: rows.text(i, 1)!, configuration: rows.text(i, 2)!, delegate: rows.text(i, 3),
                          lifecycle: rows.text(i, 4)!, invalidateMode: rows.text(i, 5), createdAt: rows.int64(i, 6),
                          ackedThrough: rows.int64(i, 7), deliveredThrough: rows.int64(i, 8), lastEventSeq: rows.int64(i, 9))
        }
    }

    static func sessionSummaries(_ sessions: [String], _ db: PostgresConnection) throws -> [String: SessionSummary] {
        let rows = try db.query("""
            SELECT session, state, count(*), max(sequence) FROM tasks WHERE session = ANY($1::text[]) GROUP BY session, state
            """, [PostgresText.array(sessions.map { Optional($0) })])
        var result: [String: SessionSummary] = [:]
        for session in sessions {
            result[session] = SessionSummary(counts: Dictionary(uniqueKeysWithValues: TaskState.allCases.map { ($0, 0) }), maxSequence: 0)
        }
        for i in 0..<rows.count {
            guard let session = rows.text(i, 0), let state = rows.text(i, 1).flatMap(TaskState.init(rawValue:)) else { continue }
            guard var summary = result[session] else { continue }
            summary.counts[state] = Int(rows.int64(i, 2))
            summary.maxSequence = max(summary.maxSequence, rows.int64(i, 3))
            result[session] = summary
        }
        return result
    }

    /// The unfinished tasks' rows, documents decoded by the caller.
    static func unfinishedRows(_ db: PostgresConnection) throws -> [(columns: TaskColumns, document: [UInt8])] {
        let rows = try db.query("SELECT \(recordColumns) FROM tasks WHERE state <> 'completed'")
        return (0..<rows.count).compactMap { i in columns(rows, i).map { ($0, rows.bytes(i, 6)) } }
    }

    static func completedBefore(_ cutoff: Timestamp, limit: Int, _ db: PostgresConnection) throws -> [TaskRecord] {
        try records(db.query("""
            SELECT \(recordColumns) FROM tasks WHERE completed_at IS NOT NULL AND completed_at < $1 ORDER BY completed_at LIMIT $2
            """, [String(cutoff.milliseconds), String(limit)]))
    }

    static func taskExists(session: String, id: String, _ db: PostgresConnection) throws -> Bool {
        try db.query("SELECT 1 FROM tasks WHERE session = $1 AND id = $2", [session, id]).count > 0
    }

    static func loadTask(session: String, id: String, _ db: PostgresConnection) throws -> TaskRecord? {
        try records(db.query("SELECT \(recordColumns) FROM tasks WHERE session = $1 AND id = $2", [session, id])).first
    }

    static func loadTask(session: String, idempotencyKey: String, _ db: PostgresConnection) throws -> TaskRecord? {
        try records(db.query("SELECT \(recordColumns) FROM tasks WHERE session = $1 AND idempotency_key = $2", [session, idempotencyKey])).first
    }

    /// A null filter matches every row: one prepared statement serves the four combinations.
    static func listTasks(session: String, after: Int64, state: TaskState?, kind: TaskKind?, limit: Int,
                          _ db: PostgresConnection) throws -> [TaskRecord]
    {
        try records(db.query("""
            SELECT \(recordColumns) FROM tasks
            WHERE session = $1 AND sequence > $2 AND ($3::text IS NULL OR state = $3) AND ($4::text IS NULL OR kind = $4)
            ORDER BY sequence LIMIT $5
            """, [session, String(after), state?.rawValue, kind?.rawValue, String(limit)]))
    }

    // MARK: rows

    /// What a task is read from, in this order: `columns(_:_:)` and `decode(_:_:)` read them.
    static let recordColumns = "session, id, sequence, kind, state, completed_at, doc"

    static func columns(_ rows: PostgresRows, _ i: Int) -> TaskColumns? {
        guard let session = rows.text(i, 0), let id = rows.text(i, 1), let kind = rows.text(i, 3).flatMap(TaskKind.init(rawValue:)),
              let state = rows.text(i, 4).flatMap(TaskState.init(rawValue:))
        else { return nil }
        return TaskColumns(session: session, id: id, sequence: rows.int64(i, 2), kind: kind, state: state,
                           completedAt: rows.isNull(i, 5) ? nil : Timestamp(milliseconds: rows.int64(i, 5)))
    }

    static func decode(_ rows: PostgresRows, _ i: Int) -> TaskRecord? {
        guard let columns = columns(rows, i), let value = try? JSONParser.parse(rows.bytes(i, 6)) else { return nil }
        return TaskRecord(stored: value, columns: columns)
    }

    private static func records(_ rows: PostgresRows) -> [TaskRecord] {
        (0..<rows.count).compactMap { decode(rows, $0) }
    }
}
