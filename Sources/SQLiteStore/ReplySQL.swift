import Store
import TransferModel
import TransferStore

/// SQL for the replies kept for `Idempotency-Key`.
enum ReplySQL {
    static func keep(_ reply: StoredReply, now: Timestamp, _ db: Database) throws {
        try db.statement("DELETE FROM idempotent_replies WHERE expires_at <= ?").bind(.integer(now.milliseconds)).run()
        try db.statement("""
            INSERT OR REPLACE INTO idempotent_replies (scope, body_hash, status, headers, body, expires_at)
            VALUES (?, ?, ?, ?, ?, ?)
            """)
            .bind(.text(reply.scope), .text(reply.bodyHash), .int(reply.status), .text(reply.headers), .blob(reply.body),
                  .integer(reply.expiresAt.milliseconds))
            .run()
    }

    static func lookup(_ scope: String, now: Timestamp, _ db: Database) throws -> StoredReply? {
        let s = try db.statement("""
            SELECT body_hash, status, headers, body, expires_at FROM idempotent_replies WHERE scope = ? AND expires_at > ?
            """)
        try s.bind(.text(scope), .integer(now.milliseconds))
        defer { s.reset() }
        guard try s.step() else { return nil }
        return StoredReply(scope: scope, bodyHash: s.text(0)!, status: s.int(1), headers: s.text(2)!, body: s.blob(3),
                           expiresAt: Timestamp(milliseconds: s.int64(4)))
    }
}
