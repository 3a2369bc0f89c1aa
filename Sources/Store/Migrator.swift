/// Numbered schema migrations, applied in order at start. `PRAGMA user_version` records the last
/// one applied; each runs in its own transaction, so a crash leaves the schema at a whole version.
public struct Migration: Sendable {
    public let version: Int
    public let sql: String

    public init(_ version: Int, _ sql: String) {
        self.version = version
        self.sql = sql
    }
}

public enum Migrator {
    /// Applies what `database` lacks; refuses a database from a newer transferd.
    public static func migrate(_ database: Database, to migrations: [Migration]) throws {
        let current = Int(try database.scalar("PRAGMA user_version") ?? 0)
        let latest = migrations.map(\.version).max() ?? 0
        guard current <= latest else {
            throw DatabaseError(code: 1, message: "the database is at schema version \(current), newer than this transferd (\(latest))")
        }
        for migration in migrations.sorted(by: { $0.version < $1.version }) where migration.version > current {
            try database.execute("BEGIN IMMEDIATE")
            do {
                try database.execute(migration.sql)
                try database.execute("PRAGMA user_version = \(migration.version)")
                try database.execute("COMMIT")
            } catch {
                try? database.execute("ROLLBACK")
                throw error
            }
        }
    }
}
