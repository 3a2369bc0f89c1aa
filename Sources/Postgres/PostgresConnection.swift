import CPostgres
import Glibc

/// One libpq connection. Not thread-safe, as libpq's `PGconn` is not: a connection belongs to one
/// thread at a time (the store's writer, or one reader borrowing it from the pool).
///
/// Every statement run through `query(_:_:)` is prepared once per connection (`PQprepare`) and
/// then executed by name with text parameters, so a hot statement costs one round trip and no
/// planning; `reset()` forgets them with the server session that held them.
public final class PostgresConnection {
    private let handle: OpaquePointer
    /// Names of the statements prepared on this server session, by their text.
    private var prepared: [String: String] = [:]

    /// `url`: a `postgres://` or `postgresql://` URL (or libpq's `key=value` form). A connection
    /// attempt gives up after 5 s unless the URL says otherwise (`connect_timeout`), and a peer
    /// that stops answering is noticed by TCP keepalives instead of hanging a query forever.
    public init(url: String) throws(PostgresError) {
        // With `expand_dbname`, the URL in `dbname` is expanded in place: keywords after it override
        // it, those before it are overridden by it — so the defaults go first.
        let keywords = ["connect_timeout", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                        "application_name", "dbname"]
        let values = ["5", "5", "2", "3", "15000", "transferd", url]
        let connection = withCStrings(keywords) { k in withCStrings(values) { v in PQconnectdbParams(k, v, 1) } }
        guard let connection else { throw PostgresError(message: "out of memory connecting to PostgreSQL", sqlState: nil, isConnectionBroken: true) }
        handle = connection
        // Every property is set by now, so a throw runs `deinit`, which finishes the handle.
        guard PQstatus(handle) == CONNECTION_OK else { throw PostgresError(message: lastMessage, sqlState: nil, isConnectionBroken: true) }
        // Notices (a `CREATE TABLE IF NOT EXISTS` that found the table) are not errors: silence them.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    /// Why `url` is not a PostgreSQL URL libpq can use (nil when it is): checked at start, so a
    /// typo stops the process with a message instead of failing every connection later. libpq
    /// parses the URL; the ports it leaves to the connection are checked here.
    public static func problem(withURL url: String) -> String? {
        guard let rest = url.strippingPrefix("postgres://") ?? url.strippingPrefix("postgresql://") else {
            return "expected a URL such as postgres://user:password@host:5432/database"
        }
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &error) else {
            let message = error.map { String(cString: $0).trimmingSuffixNewline() } ?? "not a valid URL"
            PQfreemem(error)
            return message
        }
        PQconninfoFree(options)
        let authority = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)[0]
            .split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let hosts = authority.split(separator: "@").last.map(String.init) ?? ""
        for host in hosts.split(separator: ",") {
            // The port follows the last colon outside an IPv6 address's brackets.
            guard let colon = host.lastIndex(of: ":"), !host[colon...].contains("]") else { continue }
            let port = host[host.index(after: colon)...]
            guard let number = Int(port), (1...65535).contains(number) else { return "invalid port '\(port)'" }
        }
        return nil
    }

    /// `url` with its password replaced by `***`, for messages and logs.
    public static func redacted(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@"),
              let colon = url[scheme.upperBound..<at].firstIndex(of: ":")
        else { return url }
        return String(url[..<url.index(after: colon)]) + "***" + String(url[at...])
    }

    /// Whether the connection to the server is lost; `reset()` tries to make a new one.
    public var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

    /// Reconnects with the same parameters; prepared statements and `LISTEN`s are gone with the
    /// old server session.
    public func reset() throws(PostgresError) {
        prepared = [:]
        PQreset(handle)
        if isBroken { throw PostgresError(message: lastMessage, sqlState: nil, isConnectionBroken: true) }
    }

    /// Runs one or more statements that need no parameters (`PQexec`), discarding their rows.
    public func execute(_ sql: String) throws(PostgresError) {
        _ = try check(PQexec(handle, sql))
    }

    /// Prepares `sql` under `name` on this connection, for `query(name:params:)`.
    public func prepare(name: String, sql: String) throws(PostgresError) {
        _ = try check(PQprepare(handle, name, sql, 0, nil))
    }

    /// Runs a statement prepared by `prepare(name:sql:)` with text parameters (nil is NULL).
    public func query(name: String, params: [String?]) throws(PostgresError) -> PostgresRows {
        let result = withParameters(params) { count, values in PQexecPrepared(handle, name, count, values, nil, nil, 0) }
        return try check(result)
    }

    /// Runs `sql` with text parameters `$1…`, prepared on first use and by name afterwards.
    public func query(_ sql: String, _ params: [String?] = []) throws(PostgresError) -> PostgresRows {
        if let name = prepared[sql] { return try query(name: name, params: params) }
        let name = "s\(prepared.count + 1)"
        try prepare(name: name, sql: sql)
        prepared[sql] = name
        return try query(name: name, params: params)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if !isBroken { try? execute("ROLLBACK") }
            throw error
        }
    }

    // MARK: LISTEN/NOTIFY

    /// Subscribes this connection to `channel`; what is notified there is read by
    /// `drainNotifications()` once `socketDescriptor` is readable.
    public func listen(_ channel: String) throws(PostgresError) {
        try execute("LISTEN \(quotedIdentifier(channel))")
    }

    /// The connection's socket, for an event loop to watch for readability (it changes with `reset()`).
    public var socketDescriptor: Int32 { PQsocket(handle) }

    /// Reads what arrived on the socket and returns the notifications received, oldest first.
    public func drainNotifications() throws(PostgresError) -> [(channel: String, payload: String)] {
        guard PQconsumeInput(handle) == 1 else { throw PostgresError(message: lastMessage, sqlState: nil, isConnectionBroken: isBroken) }
        var out: [(channel: String, payload: String)] = []
        while let notification = PQnotifies(handle) {
            out.append((String(cString: notification.pointee.relname), String(cString: notification.pointee.extra)))
            PQfreemem(notification)
        }
        return out
    }

    // MARK: helpers

    private var lastMessage: String { String(cString: PQerrorMessage(handle)).trimmingSuffixNewline() }

    /// The rows of a successful result; an error (with its SQLSTATE) otherwise.
    private func check(_ result: OpaquePointer?) throws(PostgresError) -> PostgresRows {
        guard let result else { throw PostgresError(message: lastMessage, sqlState: nil, isConnectionBroken: isBroken) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgresRows(result)
        default:
            let state = PQresultErrorField(result, transferd_pq_diag_sqlstate()).map { String(cString: $0) }
            // The primary message alone ("duplicate key value violates…"), without the severity
            // and detail lines the full message adds; the full one when there is no primary.
            let primary = PQresultErrorField(result, transferd_pq_diag_message_primary()).map { String(cString: $0) }
            var message = primary ?? String(cString: PQresultErrorMessage(result)).trimmingSuffixNewline()
            PQclear(result)
            if message.isEmpty { message = lastMessage }
            throw PostgresError(message: message, sqlState: state, isConnectionBroken: isBroken)
        }
    }

    private func withParameters<T>(_ params: [String?], _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
        // strdup'ed copies: the C strings must live until libpq has sent them.
        let copies: [UnsafeMutablePointer<CChar>?] = params.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) }
        return pointers.withUnsafeBufferPointer { body(Int32(params.count), $0.baseAddress) }
    }
}

/// A name as a quoted SQL identifier.
func quotedIdentifier(_ name: String) -> String {
    "\"" + name.replacingAll("\"", with: "\"\"") + "\""
}

extension String {
    func strippingPrefix(_ prefix: String) -> Substring? { hasPrefix(prefix) ? dropFirst(prefix.count) : nil }

    /// libpq's messages end with a newline.
    func trimmingSuffixNewline() -> String { hasSuffix("\n") ? String(dropLast()) : self }

    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}

/// NUL-terminated copies of `strings` followed by a NULL, as libpq's keyword and value arrays.
private func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
    let copies = strings.map { strdup($0) } + [nil]
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer($0) }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
