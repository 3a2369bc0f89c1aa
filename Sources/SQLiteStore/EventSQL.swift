import JSON
import Store
import TransferModel

/// SQL for the event journal and the webhook attempts. An event's row keeps its session as a
/// number, its type as a code and a shortened id (`EventRows`).
enum EventSQL {
    /// Several rows per statement, `OR FAIL`: see `TaskSQL.insertTasks`. An event in `references`
    /// is stored with '' as its data, to be rebuilt from its task's row (migration 31).
    static func insert(_ events: [Event], references: EventReferences, _ db: Database) throws {
        var numbers: [String: Int64] = [:]
        for session in Set(events.map(\.session)) { numbers[session] = try EventRows.number(of: session, create: true, db) }
        try db.insertRows("INSERT OR FAIL INTO events (session, seq, type, task, at, data, id) VALUES",
                          columns: 7, count: events.count) { i, values in
            let e = events[i]
            values += [.integer(numbers[e.session]!), .integer(e.seq), .integer(EventRows.codes[e.type]!), .optionalText(e.task),
                       .integer(e.at.milliseconds), references.isReference(e) ? .text("") : .utf8(e.data),
                       .text(EventRows.storedID(e.id, at: e.at))]
        }
    }

    /// Events of a session after `seq`, in order; a reference's data rebuilt from its task's row.
    static func events(_ session: String, after seq: Int64, limit: Int, _ db: Database) throws -> [Event] {
        guard let number = try EventRows.number(of: session, create: false, db) else { return [] }
        let s = try db.statement("""
            SELECT e.seq, e.id, e.type, e.task, e.at, e.data, \(TaskSQL.joinedRecordColumns)
            FROM events AS e LEFT JOIN tasks AS t ON e.data = '' AND t.session = ?1 AND t.id = e.task
            WHERE e.session = ?2 AND e.seq > ?3 ORDER BY e.seq LIMIT ?4
            """)
        try s.bind(.text(session), .integer(number), .integer(seq), .int(limit))
        defer { s.reset() }
        var out: [Event] = []
        // A completion's references are neighbours: their task is decoded once.
        var task: TaskRecord?
        while try s.step() {
            guard let type = EventRows.types[s.int64(2)] else { continue }
            let at = Timestamp(milliseconds: s.int64(4))
            var data = s.blob(5)
            if data.isEmpty {
                if task?.id != s.text(3) { task = s.isNull(6) ? nil : TaskSQL.decode(s, from: 6) }
                // The row goes only after the references are written out (`EventReferences.writeOut`),
                // so a reference without its row is not expected; should one be met, its data is null.
                data = task?.eventData(type) ?? Array("null".utf8)
            }
            out.append(Event(id: EventRows.id(stored: s.text(1)!, at: at), seq: s.int64(0), session: session, type: type,
                             task: s.text(3), at: at, data: data))
        }
        return out
    }

    /// Through the time the id carries (`Event.newID(at:)`) and `events_by_time`; an id of another
    /// form (stored before migration 31) by a scan of the session's events.
    static func event(_ session: String, id: String, _ db: Database) throws -> Event? {
        guard let number = try EventRows.number(of: session, create: false, db) else { return nil }
        var seq: Int64?
        if let at = Event.time(ofID: id) {
            let s = try db.statement("SELECT seq FROM events INDEXED BY events_by_time WHERE at = ? AND session = ? AND id = ?")
            try s.bind(.integer(at.milliseconds), .integer(number), .text(EventRows.storedID(id, at: at)))
            defer { s.reset() }
            if try s.step() { seq = s.int64(0) }
        }
        if seq == nil {
            let s = try db.statement("SELECT seq FROM events WHERE session = ? AND id = ?")
            try s.bind(.integer(number), .text(id))
            defer { s.reset() }
            if try s.step() { seq = s.int64(0) }
        }
        guard let seq else { return nil }
        return try events(session, after: seq - 1, limit: 1, db).first
    }

    static func setAcked(_ session: String, through seq: Int64, _ db: Database) throws {
        try db.statement("UPDATE sessions SET acked_through = max(acked_through, ?) WHERE identifier = ?")
            .bind(.integer(seq), .text(session)).run()
    }

    static func setDelivered(_ session: String, through seq: Int64, _ db: Database) throws {
        try db.statement("UPDATE sessions SET delivered_through = max(delivered_through, ?) WHERE identifier = ?")
            .bind(.integer(seq), .text(session)).run()
    }

    /// The highest seq of a session (one probe of the primary key), for its counter to continue
    /// after a restart.
    static func lastSeq(_ session: String, _ db: Database) throws -> Int64 {
        guard let number = try EventRows.number(of: session, create: false, db) else { return 0 }
        let s = try db.statement("SELECT max(seq) FROM events WHERE session = ?")
        try s.bind(.integer(number))
        defer { s.reset() }
        return try s.step() ? s.int64(0) : 0
    }

    /// A session's newest event stays whatever its age: its seq is where numbering continues after
    /// a restart (`lastSeq`), and seqs must never be reused.
    static func deleteOlder(than cutoff: Timestamp, limit: Int, _ db: Database) throws {
        try db.statement("""
            DELETE FROM events WHERE (session, seq) IN (
              SELECT session, seq FROM events AS e WHERE at < ?
                AND seq < (SELECT max(seq) FROM events WHERE session = e.session) LIMIT ?)
            """)
            .bind(.integer(cutoff.milliseconds), .int(limit)).run()
        try db.statement("DELETE FROM deliveries WHERE at < ?").bind(.integer(cutoff.milliseconds)).run()
    }

    static func recordAttempt(_ a: DeliveryAttempt, _ db: Database) throws {
        try db.statement("""
            INSERT INTO deliveries (session, event, seq, attempt, at, status, error, next_attempt_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
            .bind(.text(a.session), .text(a.event), .integer(a.seq), .int(a.attempt), .integer(a.at.milliseconds),
                  a.status.map { .int($0) } ?? .null, .optionalText(a.error), .optionalInt(a.nextAttemptAt?.milliseconds))
            .run()
    }

    /// The rowid is an attempt's position: rows of `deliveries` are only appended.
    static func attempts(_ session: String, afterRow: Int64, limit: Int, _ db: Database) throws -> [(position: Int64, attempt: DeliveryAttempt)] {
        let s = try db.statement("""
            SELECT rowid, event, seq, attempt, at, status, error, next_attempt_at FROM deliveries
            WHERE session = ? AND rowid > ? ORDER BY rowid LIMIT ?
            """)
        try s.bind(.text(session), .integer(afterRow), .int(limit))
        defer { s.reset() }
        var out: [(position: Int64, attempt: DeliveryAttempt)] = []
        while try s.step() {
            out.append((s.int64(0), DeliveryAttempt(session: session, event: s.text(1)!, seq: s.int64(2), attempt: s.int(3),
                                                    at: Timestamp(milliseconds: s.int64(4)), status: s.isNull(5) ? nil : s.int(5),
                                                    error: s.text(6), nextAttemptAt: s.isNull(7) ? nil : Timestamp(milliseconds: s.int64(7)))))
        }
        return out
    }

    static func deleteSessionEvents(_ session: String, _ db: Database) throws {
        if let number = try EventRows.number(of: session, create: false, db) {
            try db.statement("DELETE FROM events WHERE session = ?").bind(.integer(number)).run()
            try db.statement("DELETE FROM event_sessions WHERE number = ?").bind(.integer(number)).run()
        }
        try db.statement("DELETE FROM deliveries WHERE session = ?").bind(.text(session)).run()
    }
}
