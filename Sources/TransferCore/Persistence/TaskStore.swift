import Dispatch
import JSON
import Store
import TransferModel

/// The durable side of sessions and tasks: SQL in one place, over the group-committing writer
/// and the read pool. Ephemeral sessions never reach it.
package final class TaskStore: Sendable {
    let writer: StoreWriter
    package let reader: StoreReader

    package init(path: String) throws {
        let database = try StoreFile.openForWriting(path: path, migrations: Schema.migrations)
        writer = StoreWriter(database: database)
        reader = StoreReader(path: path)
    }

    package func close() { writer.close() }

    // MARK: writes (run inside the writer's group commit)

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

    /// Removes a session with its tasks and their spooled bodies; returns those blobs' ids, whose
    /// files the caller removes once this committed.
    @discardableResult
    static func deleteSession(_ identifier: String, _ db: Database) throws -> [String] {
        try EventStore.deleteSessionEvents(identifier, db)
        try CookieStore.deleteSessionCookies(identifier, db)
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

    /// Inserts new tasks; a duplicate id or idempotency key fails the whole operation (and with it
    /// its savepoint), so a batch is all-or-nothing.
    /// `documents[i]` is the stored form of `tasks[i]`, encoded by the caller (off the writer thread).
    ///
    /// `OR FAIL` rather than the default `ABORT`: ABORT makes SQLite keep a statement journal so it
    /// can undo a statement's earlier rows, copying each page the statement touches; the savepoint
    /// around the operation undoes a failed insert anyway.
    static func insertTasks(_ tasks: [TaskRecord], documents: [[UInt8]], _ db: Database) throws {
        try db.insertRows("INSERT OR FAIL INTO tasks (session, id, sequence, kind, state, idempotency_key, completed_at, doc) VALUES",
                          columns: 8, count: tasks.count) { i, values in
            let task = tasks[i]
            values += [.text(task.session), .text(task.id), .integer(task.sequence), .text(task.kind.rawValue),
                       .text(task.state.rawValue), .optionalText(task.idempotencyKey),
                       .optionalInt(task.completedAt?.milliseconds), .utf8(documents[i])]
        }
    }

    /// Stores a task's new state; `document` is its stored form when the caller encoded it already.
    static func updateTask(_ task: TaskRecord, document doc: [UInt8]? = nil, _ db: Database) throws {
        try db.statement("UPDATE tasks SET state = ?, completed_at = ?, doc = ? WHERE session = ? AND id = ?")
            .bind(.text(task.state.rawValue), .optionalInt(task.completedAt?.milliseconds), .utf8(doc ?? document(task)),
                  .text(task.session), .text(task.id))
            .run()
    }

    /// Suspend and resume: the state and phase only, so what an attempt reported meanwhile stays,
    /// and never over a completed row (a completion decided meanwhile wins: a completed task
    /// never runs again).
    static func updateState(session: String, id: String, state: TaskState, phase: TaskPhase, _ db: Database) throws {
        try db.statement("""
            UPDATE tasks SET state = ?, doc = json_set(doc, '$.state', ?, '$.phase', ?)
            WHERE session = ? AND id = ? AND state != 'completed'
            """)
            .bind(.text(state.rawValue), .text(state.rawValue), .text(phase.rawValue), .text(session), .text(id))
            .run()
    }

    /// What an attempt reported (progress, response, validator, phase), but never the state,
    /// which suspend and resume decide (one may have been decided since the record was taken),
    /// and never over a completed row.
    static func updateTaskKeepingState(_ task: TaskRecord, document doc: [UInt8]? = nil, _ db: Database) throws {
        try db.statement("UPDATE tasks SET doc = json_set(?, '$.state', state) WHERE session = ? AND id = ? AND state != 'completed'")
            .bind(.utf8(doc ?? document(task)), .text(task.session), .text(task.id))
            .run()
    }

    /// `PATCH`: priority and description, whatever state the stored task is in by now.
    static func updateDetails(session: String, id: String, priority: Double, description: String?, _ db: Database) throws {
        try db.statement("UPDATE tasks SET doc = json_set(doc, '$.priority', ?, '$.description', ?) WHERE session = ? AND id = ?")
            .bind(.real(priority), .optionalText(description), .text(session), .text(id))
            .run()
    }

    static func deleteTask(session: String, id: String, _ db: Database) throws {
        try db.statement("DELETE FROM tasks WHERE session = ? AND id = ?").bind(.text(session), .text(id)).run()
    }

    /// The stored task with this id, or else with this idempotency key: what an insert collided
    /// with. Two lookups, each on its own index (an `OR` of the two would scan the session).
    static func existing(session: String, id: String, idempotencyKey: String?, _ db: Database) throws -> TaskRecord? {
        let byID = try db.statement("SELECT doc FROM tasks WHERE session = ? AND id = ?")
        try byID.bind(.text(session), .text(id))
        defer { byID.reset() }
        if try byID.step() { return decode(byID.text(0)) }
        guard let idempotencyKey else { return nil }
        let byKey = try db.statement("SELECT doc FROM tasks WHERE session = ? AND idempotency_key = ?")
        try byKey.bind(.text(session), .text(idempotencyKey))
        defer { byKey.reset() }
        return try byKey.step() ? decode(byKey.text(0)) : nil
    }

    // MARK: reads

    func loadSessions() throws -> [StoredSession] {
        try reader.read { db in
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
            for i in result.indices { result[i].lastEventSeq = try EventStore.lastSeq(result[i].identifier, db) }
            return result
        }
    }

    /// Tasks not yet completed, across sessions: what start-up must bring back into memory.
    /// Decoding the documents is most of a start-up with many unfinished tasks (tens of
    /// thousands scheduled for later), so it is spread over the cores; the reading is not.
    func loadUnfinishedTasks() throws -> [TaskRecord] {
        let documents: [[UInt8]] = try reader.read { db in
            let s = try db.statement("SELECT doc FROM tasks WHERE state != 'completed'")
            defer { s.reset() }
            var documents: [[UInt8]] = []
            while try s.step() { documents.append(s.blob(0)) }
            return documents
        }
        var decoded = [TaskRecord?](repeating: nil, count: documents.count)
        // A few more pieces than cores; concurrentPerform runs them on as many threads as there are.
        let workers = max(1, min(16, documents.count / 512))
        decoded.withUnsafeMutableBufferPointer { buffer in
            nonisolated(unsafe) let slots = buffer  // each worker writes only its own indexes
            DispatchQueue.concurrentPerform(iterations: workers) { worker in
                for i in stride(from: worker, to: documents.count, by: workers) {
                    slots[i] = (try? JSONParser.parse(documents[i])).flatMap(TaskRecord.init(stored:))
                }
            }
        }
        return decoded.compactMap { $0 }
    }

    /// Per session: task counts by state and the highest sequence, from the indexes alone (an
    /// index-only count per session and state, and one index probe for the maximum).
    func loadSessionSummaries(_ sessions: [String]) throws -> [String: (counts: [TaskState: Int], maxSequence: Int64)] {
        try reader.read { db in
            var result: [String: (counts: [TaskState: Int], maxSequence: Int64)] = [:]
            let count = try db.statement("SELECT count(*) FROM tasks WHERE session = ? AND state = ?")
            let maximum = try db.statement("SELECT max(sequence) FROM tasks WHERE session = ?")
            for session in sessions {
                var counts: [TaskState: Int] = [:]
                for state in TaskState.allCases {
                    try count.bind(.text(session), .text(state.rawValue))
                    if try count.step() { counts[state] = count.int(0) }
                    count.reset()
                }
                try maximum.bind(.text(session))
                let max = try maximum.step() ? maximum.int64(0) : 0
                maximum.reset()
                result[session] = (counts, max)
            }
            return result
        }
    }

    /// Completed tasks whose completion is older than `cutoff`, oldest first (the retention sweep).
    func completedBefore(_ cutoff: Timestamp, limit: Int) throws -> [TaskRecord] {
        try reader.read { db in
            let s = try db.statement("SELECT doc FROM tasks WHERE completed_at IS NOT NULL AND completed_at < ? ORDER BY completed_at LIMIT ?")
            try s.bind(.integer(cutoff.milliseconds), .int(limit))
            defer { s.reset() }
            var out: [TaskRecord] = []
            while try s.step() { if let t = TaskStore.decode(s.text(0)) { out.append(t) } }
            return out
        }
    }

    /// Whether a task of this id is stored (an index probe; the document is not read).
    func taskExists(session: String, id: String) throws -> Bool {
        try reader.read { db in
            let s = try db.statement("SELECT 1 FROM tasks WHERE session = ? AND id = ?")
            try s.bind(.text(session), .text(id))
            defer { s.reset() }
            return try s.step()
        }
    }

    func loadTask(session: String, id: String) throws -> TaskRecord? {
        try reader.read { db in
            let s = try db.statement("SELECT doc FROM tasks WHERE session = ? AND id = ?")
            try s.bind(.text(session), .text(id))
            defer { s.reset() }
            return try s.step() ? TaskStore.decode(s.text(0)) : nil
        }
    }

    /// A page of a session's tasks in creation order, after the cursor, optionally filtered.
    func listTasks(session: String, after: Int64, state: TaskState?, kind: TaskKind?, limit: Int) throws -> [TaskRecord] {
        try reader.read { db in
            var sql = "SELECT doc FROM tasks WHERE session = ? AND sequence > ?"
            var values: [SQLValue] = [.text(session), .integer(after)]
            if let state { sql += " AND state = ?"; values.append(.text(state.rawValue)) }
            if let kind { sql += " AND kind = ?"; values.append(.text(kind.rawValue)) }
            sql += " ORDER BY sequence LIMIT ?"
            values.append(.int(limit))
            let s = try db.statement(sql)
            try s.bind(values)
            defer { s.reset() }
            var result: [TaskRecord] = []
            while try s.step() { if let t = TaskStore.decode(s.text(0)) { result.append(t) } }
            return result
        }
    }

    // MARK: documents

    static func document(_ task: TaskRecord) -> [UInt8] {
        var json = JSONWriter(capacity: 1024)
        task.encode(into: &json, storage: true)
        return json.bytes
    }

    static func decode(_ text: String?) -> TaskRecord? {
        guard let text, let value = try? JSONParser.parse(Array(text.utf8)) else { return nil }
        return TaskRecord(stored: value)
    }
}

/// A session row.
struct StoredSession: Sendable {
    var identifier: String
    var mode: String
    var configuration: String
    var delegate: String?
    var lifecycle: String
    var invalidateMode: String?
    var createdAt: Int64
    /// Read back only (written by their own statements).
    var ackedThrough: Int64 = 0
    var deliveredThrough: Int64 = 0
    var lastEventSeq: Int64 = 0
}
