import Postgres
import TransferModel

/// SQL for the event journal, the acknowledgement marks and the webhook attempts on PostgreSQL.
enum EventStatements {
    /// The channel `insertEvents` notifies on, with `session:seq` of each session's newest event in
    /// the batch: other replicas' long-polls and streams wake on it. PostgreSQL delivers it at
    /// commit, and not at all when the batch rolls back.
    static let channel = "transferd_events"

    /// The events in one statement, which also notifies; a taken (session, seq) or id fails it.
    static func insert(_ events: [Event], _ db: PostgresConnection) throws {
        _ = try db.query("""
            WITH inserted AS (
              INSERT INTO events (session, seq, id, type, task, at, data)
              SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[])
              RETURNING session, seq)
            SELECT pg_notify('\(channel)', session || ':' || max(seq)) FROM inserted GROUP BY session
            """, [PostgresText.array(events.map { Optional($0.session) }), PostgresText.array(events.map { Optional($0.seq) }),
                  PostgresText.array(events.map { Optional($0.id) }), PostgresText.array(events.map { Optional($0.type.rawValue) }),
                  PostgresText.array(events.map(\.task)), PostgresText.array(events.map { Optional($0.at.milliseconds) }),
                  PostgresText.array(utf8: events.map(\.data))])
    }

    static func events(_ session: String, after seq: Int64, limit: Int, _ db: PostgresConnection) throws -> [Event] {
        let rows = try db.query("""
            SELECT seq, id, type, task, at, data FROM events WHERE session = $1 AND seq > $2 ORDER BY seq LIMIT $3
            """, [session, String(seq), String(limit)])
        return (0..<rows.count).compactMap { i in
            guard let type = rows.text(i, 2).flatMap(EventType.init(rawValue:)) else { return nil }
            return Event(id: rows.text(i, 1)!, seq: rows.int64(i, 0), session: session, type: type, task: rows.text(i, 3),
                         at: Timestamp(milliseconds: rows.int64(i, 4)), data: rows.bytes(i, 5))
        }
    }

    static func event(_ session: String, id: String, _ db: PostgresConnection) throws -> Event? {
        let rows = try db.query("SELECT seq FROM events WHERE session = $1 AND id = $2", [session, id])
        guard rows.count > 0 else { return nil }
        return try events(session, after: rows.int64(0, 0) - 1, limit: 1, db).first
    }

    /// Marks only rise: a stale one is ignored.
    static func setAcked(_ session: String, through seq: Int64, _ db: PostgresConnection) throws {
        _ = try db.query("UPDATE sessions SET acked_through = greatest(acked_through, $1) WHERE identifier = $2", [String(seq), session])
    }

    static func setDelivered(_ session: String, through seq: Int64, _ db: PostgresConnection) throws {
        _ = try db.query("UPDATE sessions SET delivered_through = greatest(delivered_through, $1) WHERE identifier = $2",
                         [String(seq), session])
    }

    /// A session's newest event stays whatever its age: its seq is where numbering continues after a
    /// restart, and seqs are never reused. Old attempts go in the same statement.
    static func deleteOlder(than cutoff: Timestamp, limit: Int, _ db: PostgresConnection) throws {
        _ = try db.query("""
            WITH attempts AS (DELETE FROM deliveries WHERE at < $1)
            DELETE FROM events WHERE (session, seq) IN (
              SELECT session, seq FROM events AS e WHERE at < $1
                AND seq < (SELECT max(seq) FROM events WHERE session = e.session) LIMIT $2)
            """, [String(cutoff.milliseconds), String(limit)])
    }

    static func recordAttempts(_ attempts: [DeliveryAttempt], _ db: PostgresConnection) throws {
        _ = try db.query("""
            INSERT INTO deliveries (session, event, seq, attempt, at, status, error, next_attempt_at)
            SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::int[], $5::bigint[], $6::int[], $7::text[], $8::bigint[])
            """, [PostgresText.array(attempts.map { Optional($0.session) }), PostgresText.array(attempts.map { Optional($0.event) }),
                  PostgresText.array(attempts.map { Optional($0.seq) }), PostgresText.array(attempts.map { Optional(Int64($0.attempt)) }),
                  PostgresText.array(attempts.map { Optional($0.at.milliseconds) }), PostgresText.array(attempts.map { $0.status.map(Int64.init) }),
                  PostgresText.array(attempts.map(\.error)), PostgresText.array(attempts.map { $0.nextAttemptAt?.milliseconds })])
    }

    static func attempts(_ session: String, after position: Int64, limit: Int, _ db: PostgresConnection) throws
        -> [(position: Int64, attempt: DeliveryAttempt)]
    {
        let rows = try db.query("""
            SELECT position, event, seq, attempt, at, status, error, next_attempt_at FROM deliveries
            WHERE session = $1 AND position > $2 ORDER BY position LIMIT $3
            """, [session, String(position), String(limit)])
        return (0..<rows.count).map { i in
            (rows.int64(i, 0),
             DeliveryAttempt(session: session, event: rows.text(i, 1)!, seq: rows.int64(i, 2), attempt: Int(rows.int64(i, 3)),
                             at: Timestamp(milliseconds: rows.int64(i, 4)), status: rows.isNull(i, 5) ? nil : Int(rows.int64(i, 5)),
                             error: rows.text(i, 6), nextAttemptAt: rows.isNull(i, 7) ? nil : Timestamp(milliseconds: rows.int64(i, 7))))
        }
    }
}
