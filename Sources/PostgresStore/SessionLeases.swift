import Postgres
import TransferStore

/// Cluster mode's leases: which replica works on a session's tasks, until when. A replica claims
/// free sessions (`FOR UPDATE SKIP LOCKED`, so replicas claiming at once take different ones),
/// renews what it holds on a heartbeat, and releases what it stops working on; a dead replica's
/// leases expire and the sessions become claimable. Times are the database server's (`now()`), so
/// replicas' clocks need not agree. Each call is one statement on a pooled connection.
extension PostgresTransferStore: SessionLeasing {
    /// Leases to `owner`, for `ttlSeconds`, up to `limit` sessions that have no lease or an expired
    /// one; returns them. A session whose row another transaction holds locked is skipped, not
    /// waited for: it is claimable on a later call.
    package func claimSessions(owner: String, ttlSeconds: Double, limit: Int) throws -> [String] {
        try pool.withConnection { db in
            let rows = try db.query("""
                WITH free AS (
                  SELECT s.identifier FROM sessions AS s LEFT JOIN session_leases AS l ON l.session = s.identifier
                  WHERE l.session IS NULL OR l.expires_at <= now()
                  LIMIT $3 FOR UPDATE OF s SKIP LOCKED)
                INSERT INTO session_leases (session, owner, expires_at)
                SELECT identifier, $1, now() + make_interval(secs => $2) FROM free
                ON CONFLICT (session) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
                  WHERE session_leases.expires_at <= now()
                RETURNING session
                """, [owner, String(ttlSeconds), String(limit)])
            return (0..<rows.count).map { rows.text($0, 0)! }
        }
    }

    /// Leases `session` to `owner` when the session exists and no other replica holds an unexpired
    /// lease on it (or `owner` does already); returns whether `owner` holds it now.
    package func claimSession(_ session: String, owner: String, ttlSeconds: Double) throws -> Bool {
        try pool.withConnection { db in
            let rows = try db.query("""
                INSERT INTO session_leases (session, owner, expires_at)
                SELECT identifier, $2, now() + make_interval(secs => $3) FROM sessions WHERE identifier = $1
                ON CONFLICT (session) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
                  WHERE session_leases.expires_at <= now() OR session_leases.owner = excluded.owner
                RETURNING session
                """, [session, owner, String(ttlSeconds)])
            return rows.count > 0
        }
    }

    /// Extends `owner`'s leases that have not expired by `ttlSeconds` from now; returns the sessions
    /// still held. One that expired is not renewed — another replica may have claimed it already —
    /// and its absence tells the owner to stop working on it. The lease of a session removed since
    /// is not renewed either: it expires, and with it the last trace of the session.
    package func renewLeases(owner: String, ttlSeconds: Double) throws -> Set<String> {
        try pool.withConnection { db in
            let rows = try db.query("""
                WITH gone AS (DELETE FROM session_leases AS l WHERE l.expires_at <= now()
                                AND NOT EXISTS (SELECT 1 FROM sessions AS s WHERE s.identifier = l.session))
                UPDATE session_leases AS l SET expires_at = now() + make_interval(secs => $2)
                WHERE l.owner = $1 AND l.expires_at > now()
                  AND EXISTS (SELECT 1 FROM sessions AS s WHERE s.identifier = l.session)
                RETURNING l.session
                """, [owner, String(ttlSeconds)])
            return Set((0..<rows.count).map { rows.text($0, 0)! })
        }
    }

    /// Gives up `owner`'s leases of `sessions` (a clean shutdown, a session handed over), so others
    /// may claim them at once instead of after the expiry.
    package func releaseLeases(owner: String, sessions: [String]) throws {
        try pool.withConnection { db in
            _ = try db.query("DELETE FROM session_leases WHERE owner = $1 AND session = ANY($2::text[])",
                             [owner, PostgresText.array(sessions.map { Optional($0) })])
        }
    }

    /// The replica holding an unexpired lease on `session`, with the address it answers on (from its
    /// heartbeat): where to forward a request for the session. Nil when no live lease is held or the
    /// holder never sent a heartbeat.
    package func leaseHolder(session: String) throws -> (owner: String, address: String)? {
        try pool.withConnection { db in
            let rows = try db.query("""
                SELECT l.owner, r.address FROM session_leases AS l JOIN replicas AS r ON r.id = l.owner
                WHERE l.session = $1 AND l.expires_at > now()
                """, [session])
            return rows.count > 0 ? (rows.text(0, 0)!, rows.text(0, 1)!) : nil
        }
    }

    /// Records that `replica` is alive and answers on `address`; and forgets replicas silent for
    /// longer than `ttlSeconds` that hold no unexpired lease (so the table keeps only the living
    /// and those whose leases still name them). Returns how many replicas have been heard from
    /// within `ttlSeconds`, this one included.
    @discardableResult
    package func heartbeat(replica: String, address: String, ttlSeconds: Double) throws -> Int {
        try pool.withConnection { db in
            _ = try db.query("""
                WITH forgotten AS (
                  DELETE FROM replicas AS r WHERE r.id <> $1 AND r.heartbeat_at < now() - make_interval(secs => $3)
                    AND NOT EXISTS (SELECT 1 FROM session_leases AS l WHERE l.owner = r.id AND l.expires_at > now()))
                INSERT INTO replicas (id, address, heartbeat_at) VALUES ($1, $2, now())
                ON CONFLICT (id) DO UPDATE SET address = excluded.address, heartbeat_at = excluded.heartbeat_at
                """, [replica, address, String(ttlSeconds)])
            let alive = try db.query("SELECT count(*) FROM replicas WHERE heartbeat_at >= now() - make_interval(secs => $1)",
                                     [String(ttlSeconds)])
            return max(1, Int(alive.text(0, 0) ?? "1") ?? 1)
        }
    }
}
