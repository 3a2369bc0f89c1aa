/// An error from PostgreSQL or libpq: the server's SQLSTATE when it answered, and whether the
/// connection is lost (then the caller resets it or takes another).
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public let message: String
    /// The five-character SQLSTATE (`23505` a unique violation…); nil when no server answered.
    public let sqlState: String?
    public let isConnectionBroken: Bool

    public init(message: String, sqlState: String?, isConnectionBroken: Bool) {
        self.message = message
        self.sqlState = sqlState
        self.isConnectionBroken = isConnectionBroken
    }

    public var description: String {
        "PostgreSQL error\(sqlState.map { " \($0)" } ?? ""): \(message)"
    }

    /// A UNIQUE or PRIMARY KEY constraint refused the statement.
    public var isUniqueViolation: Bool { sqlState == "23505" }
}
