import Postgres

/// Makes the store's connections, each set up the same way: a statement that waits for a lock
/// gives up after `lockTimeoutSeconds` (a replica stopped in the middle of a transaction, or a
/// stray session of an operator's, must not stall the writer for ever — its batches fail instead,
/// and readiness still reflects the database), and a transaction of ours left idle for a minute
/// is ended by the server (should this process freeze mid-transaction, the locks it holds go).
struct Connector: Sendable {
    let url: String
    let lockTimeoutSeconds: Double

    func connect() throws -> PostgresConnection {
        let db = try PostgresConnection(url: url)
        try db.execute("""
            SET lock_timeout = '\(Int(lockTimeoutSeconds * 1000))ms'; SET idle_in_transaction_session_timeout = '60s'
            """)
        return db
    }
}
