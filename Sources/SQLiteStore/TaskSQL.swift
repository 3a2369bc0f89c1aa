import JSON
import Store
import TransferModel
import TransferStore

/// SQL for sessions and tasks (`SQLiteTransferStore`'s), each statement run on the connection it
/// is given: the writer's inside a group commit, or a reader's.
enum TaskSQL {
    // MARK: writes

    static func insertSession(_ s: StoredSession, _ db: Database) throws {
        try db.statement("""
            INSERT INTO sessions (identifier, mode, configuration, delegate, lifecycle, invalidate_mode, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (identifier) DO UPDATE SET mode = excluded.mode, configuration = excluded.configuration,
              delegate = excluded.delegate, lifecycle = excluded.lifecycle, invalidate_mode = excluded.invalidate_mode
            """)
            .bind(.text(s.identifier), .text(s.mode), .text(s.configuration), .optionalText(s.delegate),
                  .text(s.lifecycle), .optionalText(s.invalidateMode), .integer(s.createdAt))
            .run()
    }

    /// Removes a session with everything it owns; returns the ids of its tasks' spooled bodies.
    static func deleteSession(_ identifier: String, _ db: Database) throws -> [String] {
        try EventSQL.deleteSessionEvents(identifier, db)
        try CookieSQL.deleteSessionCookies(identifier, db)
        let prefix = identifier + "/"
        let owned = try db.statement("SELECT id FROM blobs WHERE substr(owner, 1, ?) = ?")
        try owned.bind(.int(prefix.utf8.count), .text(prefix))
        var ids: [String] = []
        while try owned.step() { ids.append(owned.text(0)!) }
        owned.reset()
        try db.statement("DELETE FROM blobs WHERE substr(owner, 1, ?) = ?").bind(.int(prefix.utf8.count), .text(prefix)).run()
        try db.statement("DELETE FROM tasks WHERE session = ?").bind(.text(identifier)).run()
        try db.statement("DELETE FROM sessions WHERE identifier = ?").bind(.text(identifier)).run()
        return ids
    }

    /// Inserts new tasks; a duplicate id or idempotency key fails with `StoreError.conflict`
    /// naming the stored task it collided with (and the caller's savepoint undoes the rest).
    ///
    /// `OR FAIL` rather than the default `ABORT`: ABORT makes SQLite keep a statement journal so it
    /// can undo a statement's earlier rows, copying each page the statement touches; the savepoint
    /// around the operation undoes a failed insert anyway.
    static func insertTasks(_ tasks: [TaskRecord], documents: [[UInt8]], _ db: Database) throws {
        try db.statement("SAVEPOINT inserts").run()
        do {
            try db.insertRows("INSERT OR FAIL INTO tasks (session, id, sequence, kind, state, idempotency_key, completed_at, doc) VALUES",
                              columns: 8, count: tasks.count) { i, values in
                let task = tasks[i]
                values += [.text(task.session), .text(task.id), .integer(task.sequence), .text(task.kind.rawValue),
                           .text(task.state.rawValue), .optionalText(task.idempotencyKey),
                           .optionalInt(task.completedAt?.milliseconds), .utf8(documents[i])]
            }
            try db.statement("RELEASE inserts").run()
        } catch let error as DatabaseError where error.isConstraintViolation {
            // Only now, on the rare collision, look for what it collided with (a task not in the
            // core's memory: completed and dropped from it, or from before a restart) — after
            // undoing these rows, which would otherwise be found first.
            try db.execute("ROLLBACK TO inserts; RELEASE inserts")
            for task in tasks {
                if let existing = try existing(session: task.session, id: task.id, idempotencyKey: task.idempotencyKey, db) {
                    throw StoreError.conflict(existing: existing)
                }
            }
            throw error
        }
    }

    /// `refs`: the seqs of this batch's events that refer to the row written here (`EventReferences`).
    static func updateTask(_ task: TaskRecord, document doc: [UInt8], refs: ClosedRange<Int64>?, _ db: Database) throws {
        try EventReferences.writeOut(session: task.session, task: task.id, db)
        try db.statement("UPDATE tasks SET state = ?, completed_at = ?, doc = ?, refs_from = ?, refs_to = ? WHERE session = ? AND id = ?")
            .bind(.text(task.state.rawValue), .optionalInt(task.completedAt?.milliseconds), .utf8(doc),
                  .optionalInt(refs?.lowerBound), .optionalInt(refs?.upperBound), .text(task.session), .text(task.id))
            .run()
    }

    /// Only the state and phase, so what an attempt reported meanwhile stays, and never over a
    /// completed row (a completion decided meanwhile wins: a completed task never runs again).
    static func updateState(session: String, id: String, state: TaskState, phase: TaskPhase, _ db: Database) throws {
        try db.statement("""
            UPDATE tasks SET state = ?, doc = json_set(doc, '$.phase', ?)
            WHERE session = ? AND id = ? AND state != 'completed'
            """)
            .bind(.text(state.rawValue), .text(phase.rawValue), .text(session), .text(id))
            .run()
    }

    /// The state is the row's column, which the document leaves out: it stays as it is.
    static func updateTaskKeepingState(_ task: TaskRecord, document doc: [UInt8], _ db: Database) throws {
        try db.statement("UPDATE tasks SET doc = ? WHERE session = ? AND id = ? AND state != 'completed'")
            .bind(.utf8(doc), .text(task.session), .text(task.id))
            .run()
    }

    static func updateDetails(session: String, id: String, priority: Double, description: String?, _ db: Database) throws {
        try EventReferences.writeOut(session: session, task: id, db)
        try db.statement("UPDATE tasks SET doc = json_set(doc, '$.priority', ?, '$.description', ?) WHERE session = ? AND id = ?")
            .bind(.real(priority), .optionalText(description), .text(session), .text(id))
            .run()
    }

    /// Only the progress inside the document, and only while the row still says running.
    static func flushProgress(_ rows: [ProgressUpdate], _ db: Database) throws {
        let update = try db.statement("""
            UPDATE tasks SET doc = json_set(doc, '$.progress.bytes_received', ?, '$.progress.bytes_expected_to_receive', ?,
              '$.progress.bytes_sent', ?, '$.progress.bytes_expected_to_send', ?)
            WHERE session = ? AND id = ? AND state = 'running'
            """)
        for row in rows {
            let p = row.progress
            try update.bind(.integer(p.bytesReceived), .integer(p.bytesExpectedToReceive), .integer(p.bytesSent),
                            .integer(p.bytesExpectedToSend), .text(row.session), .text(row.id))
            try update.run()
        }
    }

    /// The events that referred to the row keep their data, written out.
    static func deleteTask(session: String, id: String, _ db: Database) throws {
        try EventReferences.writeOut(session: session, task: id, db)
        try db.statement("DELETE FROM tasks WHERE session = ? AND id = ?").bind(.text(session), .text(id)).run()
    }

    /// The stored task with this id, or else with this idempotency key. Two lookups, each on its own index (an `OR` of the two would scan the session).
    static func existing(session: String, id: String, idempotencyKey: String?, _ db: Database) throws -> TaskRecord? {
        let byID = try db.statement("SELECT \(recordColumns) FROM tasks WHERE session = ? AND id = ?")
        try byID.bind(.text(session), .text(id))
        defer { byID.reset() }
        if try byID.step() { return decode(byID) }
        guard let idempotencyKey else { return nil }
        return try loadTask(session: session, idempotencyKey: idempotencyKey, db)
    }

    // MARK: reads

    static func loadSessions(_ db: Database) throws -> [StoredSession] {
        let s = try db.statement("""
            SELECT identifier, mode, configuration, delegate, lifecycle, invalidate_mode, created_at, acked_through,
                   delivered_through FROM sessions
            """)
        defer { s.reset() }
        var result: [StoredSession] = []
        while try s.step() {
            var row = StoredSession(identifier: s.text(0)!, mode: s.text(1)!, configuration: s.text(2)!,
                                    delegate: s.text(3), lifecycle: s.text(4)!, invalidateMode: s.text(5),
                                    createdAt: s.int64(6))
            row.ackedThrough = s.int64(7)
            row.deliveredThrough = s.int64(8)
            result.append(row)
        }
        s.reset()
        for i in result.indices { result[i].lastEventSeq = try EventSQL.lastSeq(result[i].identifier, db) }
        return result
    }

    /// The stored rows of the tasks not yet completed, across sessions (documents decoded by the caller).
    static func unfinishedRows(_ db: Database) throws -> [(columns: TaskColumns, document: [UInt8])] {
        let s = try db.statement("SELECT \(recordColumns) FROM tasks WHERE state != 'completed'")
        defer { s.reset() }
        var rows: [(columns: TaskColumns, document: [UInt8])] = []
        while try s.step() {
            if let columns = columns(s) { rows.append((columns, s.blob(6))) }
        }
        return rows
    }

    /// From the indexes alone: the unfinished tasks counted by state (`tasks_unfinished`), all of
    /// a session's tasks counted (`tasks_by_sequence`) — the completed are the rest — and one index
    /// probe for the maximum sequence.
    static func sessionSummaries(_ sessions: [String], _ db: Database) throws -> [String: SessionSummary] {
        var result: [String: SessionSummary] = [:]
        let unfinished = try db.statement("SELECT state, count(*) FROM tasks WHERE session = ? AND state != 'completed' GROUP BY state")
        let all = try db.statement("SELECT count(*) FROM tasks INDEXED BY tasks_by_sequence WHERE session = ?")
        let maximum = try db.statement("SELECT max(sequence) FROM tasks WHERE session = ?")
        for session in sessions {
            var counts = Dictionary(uniqueKeysWithValues: TaskState.allCases.map { ($0, 0) })
            try unfinished.bind(.text(session))
            while try unfinished.step() {
                if let state = unfinished.text(0).flatMap(TaskState.init(rawValue:)) { counts[state] = unfinished.int(1) }
            }
            unfinished.reset()
            try all.bind(.text(session))
            let total = try all.step() ? all.int(0) : 0
            all.reset()
            counts[.completed] = total - counts.values.reduce(0, +)
            try maximum.bind(.text(session))
            let max = try maximum.step() ? maximum.int64(0) : 0
            maximum.reset()
            result[session] = SessionSummary(counts: counts, maxSequence: max)
        }
        return result
    }

    static func completedBefore(_ cutoff: Timestamp, limit: Int, _ db: Database) throws -> [TaskRecord] {
        let s = try db.statement("""
            SELECT \(recordColumns) FROM tasks WHERE completed_at IS NOT NULL AND completed_at < ? ORDER BY completed_at LIMIT ?
            """)
        try s.bind(.integer(cutoff.milliseconds), .int(limit))
        defer { s.reset() }
        var out: [TaskRecord] = []
        while try s.step() { if let t = decode(s) { out.append(t) } }
        return out
    }

    /// An index probe; the document is not read.
    static func taskExists(session: String, id: String, _ db: Database) throws -> Bool {
        let s = try db.statement("SELECT 1 FROM tasks WHERE session = ? AND id = ?")
        try s.bind(.text(session), .text(id))
        defer { s.reset() }
        return try s.step()
    }

    static func loadTask(session: String, id: String, _ db: Database) throws -> TaskRecord? {
        let s = try db.statement("SELECT \(recordColumns) FROM tasks WHERE session = ? AND id = ?")
        try s.bind(.text(session), .text(id))
        defer { s.reset() }
        return try s.step() ? decode(s) : nil
    }

    static func loadTask(session: String, idempotencyKey: String, _ db: Database) throws -> TaskRecord? {
        let s = try db.statement("SELECT \(recordColumns) FROM tasks WHERE session = ? AND idempotency_key = ?")
        try s.bind(.text(session), .text(idempotencyKey))
        defer { s.reset() }
        return try s.step() ? decode(s) : nil
    }

    static func listTasks(session: String, after: Int64, state: TaskState?, kind: TaskKind?, limit: Int,
                          _ db: Database) throws -> [TaskRecord]
    {
        var sql = "SELECT \(recordColumns) FROM tasks WHERE session = ? AND sequence > ?"
        var values: [SQLValue] = [.text(session), .integer(after)]
        if let state { sql += " AND state = ?"; values.append(.text(state.rawValue)) }
        if let kind { sql += " AND kind = ?"; values.append(.text(kind.rawValue)) }
        sql += " ORDER BY sequence LIMIT ?"
        values.append(.int(limit))
        let s = try db.statement(sql)
        try s.bind(values)
        defer { s.reset() }
        var result: [TaskRecord] = []
        while try s.step() { if let t = decode(s) { result.append(t) } }
        return result
    }

    // MARK: rows

    /// What a task is read from, in this order: `columns(_:)` and `decode(_:)` read them.
    static let recordColumns = columnNames.joined(separator: ", ")
    /// The same of `tasks AS t`, in a join.
    static let joinedRecordColumns = columnNames.map { "t." + $0 }.joined(separator: ", ")
    private static let columnNames = ["session", "id", "sequence", "kind", "state", "completed_at", "doc"]

    static func columns(_ s: Statement, from first: Int32 = 0) -> TaskColumns? {
        guard let session = s.text(first), let id = s.text(first + 1),
              let kind = s.text(first + 3).flatMap(TaskKind.init(rawValue:)),
              let state = s.text(first + 4).flatMap(TaskState.init(rawValue:))
        else { return nil }
        return TaskColumns(session: session, id: id, sequence: s.int64(first + 2), kind: kind, state: state,
                           completedAt: s.isNull(first + 5) ? nil : Timestamp(milliseconds: s.int64(first + 5)))
    }

    /// The task of the row at `first` (`recordColumns`).
    static func decode(_ s: Statement, from first: Int32 = 0) -> TaskRecord? {
        guard let columns = columns(s, from: first), let value = try? JSONParser.parse(s.blob(first + 6)) else { return nil }
        return TaskRecord(stored: value, columns: columns)
    }
}
