import Store
import TransferVocabulary

/// The cookies of durable sessions (`session_cookies`, migration 7), so a `default` or
/// `background` session still has them after a restart. A session's jar is written whole when it
/// changed: jars are small, and whole writes cannot interleave with one another.
enum CookieSQL {
    static func replace(session: String, _ cookies: [Cookie], _ db: Database) throws {
        let exists = try db.statement("SELECT 1 FROM sessions WHERE identifier = ?")
        try exists.bind(.text(session))
        defer { exists.reset() }
        guard try exists.step() else { return }
        try deleteSessionCookies(session, db)
        let insert = try db.statement("""
            INSERT INTO session_cookies (session, domain, path, name, value, host_only, secure, http_only, expires)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for c in cookies {
            try insert.bind(.text(session), .text(c.domain), .text(c.path), .text(c.name), .text(c.value), .int(c.hostOnly ? 1 : 0),
                            .int(c.secure ? 1 : 0), .int(c.httpOnly ? 1 : 0), .optionalInt(c.expires))
            try insert.run()
        }
    }

    static func deleteSessionCookies(_ session: String, _ db: Database) throws {
        try db.statement("DELETE FROM session_cookies WHERE session = ?").bind(.text(session)).run()
    }

    /// A session's stored cookies that have not expired.
    static func load(session: String, _ db: Database) throws -> [Cookie] {
        let s = try db.statement("""
            SELECT name, value, domain, host_only, path, secure, http_only, expires FROM session_cookies
            WHERE session = ? AND (expires IS NULL OR expires > unixepoch())
            """)
        try s.bind(.text(session))
        defer { s.reset() }
        var cookies: [Cookie] = []
        while try s.step() {
            cookies.append(Cookie(name: s.text(0) ?? "", value: s.text(1) ?? "", domain: s.text(2) ?? "", hostOnly: s.int(3) != 0,
                                  path: s.text(4) ?? "/", secure: s.int(5) != 0, httpOnly: s.int(6) != 0,
                                  expires: s.isNull(7) ? nil : s.int64(7)))
        }
        return cookies
    }
}
