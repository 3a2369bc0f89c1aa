import Store
import TransferModel

/// SQL for the event journal and the webhook attempts.
enum EventSQL {
    /// Several rows per statement, `OR FAIL`: see `TaskSQL.insertTasks`.
    static func insert(_ events: [Event], _ db: Database) throws {
        try db.insertRows("INSERT OR FAIL INTO events (session, seq, id, type, task, at, data) VALUES",
                          columns: 7, count: events.count) { i, values in
            let e = events[i]
            values += [.text(e.session), .integer(e.seq), .text(e.id), .text(e.type.rawValue), .optionalText(e.task),
                       .integer(e.at.milliseconds), .utf8(e.data)]
        }
    }

    /// Events of a session after `seq`, in order.
    static func events(_ session: String, after seq: Int64, limit: Int, _ db: Database) throws -> [Event] {
        let s = try db.statement("SELECT seq, id, type, task, at, data FROM events WHERE session = ? AND seq > ? ORDER BY seq LIMIT ?")
        try s.bind(.text(session), .integer(seq), .int(limit))
        defer { s.reset() }
        var out: [Event] = []
        while try s.step() {
            guard let type = s.text(2).flatMap(EventType.init(rawValue:)) else { continue }
            out.append(Event(id: s.text(1)!, seq: s.int64(0), session: session, type: type, task: s.text(3),
                             at: Timestamp(milliseconds: s.int64(4)), data: Array(s.text(5)!.utf8)))
        }
        return out
    }

    static func event(_ session: String, id: String, _ db: Database) throws -> Event? {
        let s = try db.statement("SELECT seq FROM events WHERE session = ? AND id = ?")
        try s.bind(.text(session), .text(id))
        defer { s.reset() }
        guard try s.step() else { return nil }
        let seq = s.int64(0)
        s.reset()
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
        let s = try db.statement("SELECT max(seq) FROM events WHERE session = ?")
        try s.bind(.text(session))
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
        try db.statement("DELETE FROM events WHERE session = ?").bind(.text(session)).run()
        try db.statement("DELETE FROM deliveries WHERE session = ?").bind(.text(session)).run()
    }
}
