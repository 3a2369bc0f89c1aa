import CSQLite
import Glibc

/// An error from SQLite, with its extended result code and message.
public struct DatabaseError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let message: String

    public var description: String { "SQLite error \(code): \(message)" }

    /// A UNIQUE, PRIMARY KEY or other constraint refused the statement.
    public var isConstraintViolation: Bool { code & 0xFF == SQLITE_CONSTRAINT }
}

/// One SQLite connection. Not thread-safe by design: each connection is confined to one thread
/// (the writer's, or one reader at a time), so it is opened with `SQLITE_OPEN_NOMUTEX` and pays for
/// no locking of its own.
public final class Database {
    let handle: OpaquePointer
    private var statements: [String: Statement] = [:]
    /// `insertRows` statements by their head, then by row count: found without building their text.
    var rowInserts: [String: [Statement?]] = [:]

    public init(path: String, readOnly: Bool = false) throws(DatabaseError) {
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close_v2(db)
            throw DatabaseError(code: rc, message: message)
        }
        handle = db
        // Another connection holding the write lock (a checkpoint, a reader upgrading) makes us
        // wait this long before SQLITE_BUSY, instead of failing at once.
        sqlite3_busy_timeout(db, 5000)
    }

    deinit {
        statements.values.forEach { $0.finalize() }
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows.
    public func execute(_ sql: String) throws(DatabaseError) {
        var error: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &error)
        if rc != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(error)
            throw DatabaseError(code: rc, message: message)
        }
    }

    /// A prepared statement from the cache, reset and with its bindings cleared.
    public func statement(_ sql: String) throws(DatabaseError) -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw DatabaseError(code: rc, message: lastMessage) }
        let statement = Statement(stmt, database: self)
        statements[sql] = statement
        return statement
    }

    /// The first column of the first row of a query, as an integer.
    public func scalar(_ sql: String) throws(DatabaseError) -> Int64? {
        let s = try statement(sql)
        defer { s.reset() }
        return try s.step() ? s.int64(0) : nil
    }

    public var changes: Int { Int(sqlite3_changes(handle)) }

    var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }

    func check(_ rc: Int32) throws(DatabaseError) {
        guard rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW else {
            throw DatabaseError(code: rc, message: lastMessage)
        }
    }
}
