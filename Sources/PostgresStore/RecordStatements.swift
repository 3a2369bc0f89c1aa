import Postgres
import TransferModel
import TransferVocabulary

/// SQL for the smaller records on PostgreSQL: blobs' rows, session cookies, idempotent replies.
enum RecordStatements {
    // MARK: blobs

    static func insertBlob(_ blob: Blob, _ db: PostgresConnection) throws {
        _ = try db.query("INSERT INTO blobs (id, size, sha256, created_at, owner, principal) VALUES ($1, $2, $3, $4, $5, $6)",
                         [blob.id, String(blob.size), blob.sha256, String(blob.createdAt.milliseconds), blob.owner, blob.principal])
    }

    static func deleteBlob(_ id: String, _ db: PostgresConnection) throws {
        _ = try db.query("DELETE FROM blobs WHERE id = $1", [id])
    }

    static func blob(_ id: String, _ db: PostgresConnection) throws -> Blob? {
        let rows = try db.query("SELECT size, sha256, created_at, owner, principal FROM blobs WHERE id = $1", [id])
        guard rows.count > 0 else { return nil }
        return Blob(id: id, size: rows.int64(0, 0), sha256: rows.text(0, 1)!, createdAt: Timestamp(milliseconds: rows.int64(0, 2)),
                    owner: rows.text(0, 3), principal: rows.text(0, 4))
    }

    /// Client blobs past `cutoff` that no unfinished task uses. The replica that sweeps holds only
    /// some sessions, so its own tasks cannot tell whether another replica's upload still needs a
    /// blob: the unfinished tasks' documents are read once for the ids they name (`body_blob`).
    static func expiredBlobs(before cutoff: Timestamp, limit: Int, _ db: PostgresConnection) throws -> [String] {
        let rows = try db.query("""
            SELECT id FROM blobs WHERE owner IS NULL AND created_at < $1
              AND id NOT IN (SELECT used FROM (SELECT substring(doc FROM '"body_blob":"([^"]+)"') AS used FROM tasks
                                               WHERE state <> 'completed' AND strpos(doc, '"body_blob":"') > 0) named
                             WHERE used IS NOT NULL)
            ORDER BY created_at LIMIT $2
            """, [String(cutoff.milliseconds), String(limit)])
        return (0..<rows.count).map { rows.text($0, 0)! }
    }

    // MARK: cookies

    /// A session's whole jar, unless the session is gone: the row lock (`FOR SHARE`) keeps a
    /// concurrent removal of the session from slipping between the check and the write.
    static func replaceCookies(session: String, _ cookies: [Cookie], _ db: PostgresConnection) throws {
        guard try db.query("SELECT 1 FROM sessions WHERE identifier = $1 FOR SHARE", [session]).count > 0 else { return }
        _ = try db.query("DELETE FROM session_cookies WHERE session = $1", [session])
        _ = try db.query("""
            INSERT INTO session_cookies (session, domain, path, name, value, host_only, secure, http_only, expires)
            SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::boolean[], $7::boolean[], $8::boolean[],
                                     $9::bigint[])
            """, [session, PostgresText.array(cookies.map { Optional($0.domain) }), PostgresText.array(cookies.map { Optional($0.path) }),
                  PostgresText.array(cookies.map { Optional($0.name) }), PostgresText.array(cookies.map { Optional($0.value) }),
                  PostgresText.array(cookies.map { Optional($0.hostOnly ? "t" : "f") }),
                  PostgresText.array(cookies.map { Optional($0.secure ? "t" : "f") }),
                  PostgresText.array(cookies.map { Optional($0.httpOnly ? "t" : "f") }), PostgresText.array(cookies.map(\.expires))])
    }

    static func cookies(session: String, _ db: PostgresConnection) throws -> [Cookie] {
        let rows = try db.query("""
            SELECT name, value, domain, host_only, path, secure, http_only, expires FROM session_cookies
            WHERE session = $1 AND (expires IS NULL OR expires > extract(epoch FROM now()))
            """, [session])
        return (0..<rows.count).map { i in
            Cookie(name: rows.text(i, 0) ?? "", value: rows.text(i, 1) ?? "", domain: rows.text(i, 2) ?? "", hostOnly: rows.bool(i, 3),
                   path: rows.text(i, 4) ?? "/", secure: rows.bool(i, 5), httpOnly: rows.bool(i, 6),
                   expires: rows.isNull(i, 7) ? nil : rows.int64(i, 7))
        }
    }

    // MARK: replies

    /// Replaces the reply of the same scope, and removes the expired others in the same statement.
    static func keepReply(_ reply: StoredReply, now: Timestamp, _ db: PostgresConnection) throws {
        _ = try db.query("""
            WITH expired AS (DELETE FROM idempotent_replies WHERE expires_at <= $7 AND scope <> $1)
            INSERT INTO idempotent_replies (scope, body_hash, status, headers, body, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (scope) DO UPDATE SET body_hash = excluded.body_hash, status = excluded.status, headers = excluded.headers,
              body = excluded.body, expires_at = excluded.expires_at
            """, [reply.scope, reply.bodyHash, String(reply.status), reply.headers, PostgresText.bytea(reply.body),
                  String(reply.expiresAt.milliseconds), String(now.milliseconds)])
    }

    static func reply(scope: String, now: Timestamp, _ db: PostgresConnection) throws -> StoredReply? {
        let rows = try db.query("""
            SELECT body_hash, status, headers, body, expires_at FROM idempotent_replies WHERE scope = $1 AND expires_at > $2
            """, [scope, String(now.milliseconds)])
        guard rows.count > 0 else { return nil }
        return StoredReply(scope: scope, bodyHash: rows.text(0, 0)!, status: Int(rows.int64(0, 1)), headers: rows.text(0, 2)!,
                           body: rows.bytea(0, 3), expiresAt: Timestamp(milliseconds: rows.int64(0, 4)))
    }
}
