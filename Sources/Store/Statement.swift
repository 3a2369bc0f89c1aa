import CSQLite

/// A prepared statement. Bind parameters by 1-based index, `step` through rows, read columns by
/// 0-based index. Cached statements are reset before reuse, so bindings never leak between uses.
public final class Statement {
    private let handle: OpaquePointer
    private unowned let database: Database

    init(_ handle: OpaquePointer, database: Database) {
        self.handle = handle
        self.database = database
    }

    func finalize() { sqlite3_finalize(handle) }

    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    @discardableResult
    public func bind(_ values: SQLValue...) throws(DatabaseError) -> Statement {
        try bind(values)
    }

    @discardableResult
    public func bind(_ values: [SQLValue]) throws(DatabaseError) -> Statement {
        for (i, value) in values.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
            case .real(let v): rc = sqlite3_bind_double(handle, index, v)
            case .text(let v): rc = sqlite3_bind_text(handle, index, v, -1, transferd_sqlite_transient())
            case .utf8(let v):
                rc = v.withUnsafeBytes { bytes in
                    guard let base = bytes.baseAddress else { return sqlite3_bind_text(handle, index, "", 0, nil) }
                    return sqlite3_bind_text(handle, index, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count),
                                             transferd_sqlite_transient())
                }
            case .blob(let v):
                rc = v.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), transferd_sqlite_transient()) }
            }
            try database.check(rc)
        }
        return self
    }

    /// Advances to the next row; false when done.
    public func step() throws(DatabaseError) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let error = DatabaseError(code: sqlite3_extended_errcode(database.handle), message: database.lastMessage)
        sqlite3_reset(handle)
        throw error
    }

    /// Runs a statement that returns no rows.
    public func run() throws(DatabaseError) {
        defer { reset() }
        _ = try step()
    }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    public func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }
    public func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    public func text(_ column: Int32) -> String? {
        guard let p = sqlite3_column_text(handle, column) else { return nil }
        let n = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    public func blob(_ column: Int32) -> [UInt8] {
        let n = Int(sqlite3_column_bytes(handle, column))
        guard n > 0, let p = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
}

/// A value bound to a statement parameter.
public enum SQLValue: Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    /// Text given as its UTF-8 bytes (a JSON document as encoded), bound without making a `String`.
    case utf8([UInt8])
    case blob([UInt8])

    public static func int(_ v: Int) -> SQLValue { .integer(Int64(v)) }
    public static func optionalText(_ v: String?) -> SQLValue { v.map { .text($0) } ?? .null }
    public static func optionalInt(_ v: Int64?) -> SQLValue { v.map { .integer($0) } ?? .null }
}
