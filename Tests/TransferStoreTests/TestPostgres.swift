import Foundation
import Postgres
import XCTest

/// The PostgreSQL server the tests may use: `TRANSFERD_TEST_POSTGRES_URL` (`make test` and
/// `make unit` start one with scripts/postgres.sh and set it). Each test gets a schema of its own,
/// so tests neither see nor wait for one another's rows.
enum TestPostgres {
    static let url: String? = ProcessInfo.processInfo.environment["TRANSFERD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

    static let skipReason = "TRANSFERD_TEST_POSTGRES_URL is not set: no PostgreSQL to test against (make test starts one)"

    /// Runs `body` with a URL whose connections use a new, empty schema; drops it after.
    static func withSchema<T>(_ body: (String) throws -> T) throws -> T {
        guard let url else { throw PostgresError(message: skipReason, sqlState: nil, isConnectionBroken: true) }
        let schema = "t_\(UInt64.random(in: 0...UInt64.max))"
        let admin = try PostgresConnection(url: url)
        try admin.execute("CREATE SCHEMA \(schema)")
        defer { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
        return try body(scoped(url, schema: schema))
    }

    /// `url` with connections whose search path is `schema` (libpq's `options` parameter).
    static func scoped(_ url: String, schema: String) -> String {
        url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
    }
}

/// The XCTest cases that need the PostgreSQL server: skipped, saying why, when there is none.
class PostgresTestCase: XCTestCase {
    typealias F = Fixture

    override func setUpWithError() throws {
        if TestPostgres.url == nil { throw XCTSkip(TestPostgres.skipReason) }
    }
}
