import Postgres
import Reactor

/// Connections for reads (and the short lease statements) from any thread, one caller at a time
/// each (libpq's connections are not thread-safe): borrowed from the idle ones, or made when none is
/// idle, and returned after. A connection that broke is dropped instead of returned, so the next
/// caller connects afresh — that is how reads recover when the server comes back.
final class ConnectionPool: @unchecked Sendable {
    private let connector: Connector
    private let idle = Locked<[PostgresConnection]>([])
    /// Idle connections kept beyond this are closed: a burst of reads must not hold the server's
    /// connections for ever.
    let keep: Int

    init(connector: Connector, keep: Int = 8) {
        self.connector = connector
        self.keep = keep
    }

    /// A call that meets an idle connection broken since its last use (the server restarted
    /// meanwhile) runs again once on a new one: a read changes nothing, so running it twice is
    /// safe; a lease statement run twice claims, renews or releases again, which is what was asked.
    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        guard let db = idle.withLock({ $0.popLast() }) else { return try run(on: connector.connect(), body) }
        do {
            return try run(on: db, body)
        } catch let error as PostgresError where error.isConnectionBroken {
            idle.withLock { $0.removeAll() }  // they are as stale as this one
            return try run(on: connector.connect(), body)
        }
    }

    private func run<T>(on db: PostgresConnection, _ body: (PostgresConnection) throws -> T) throws -> T {
        do {
            let value = try body(db)
            giveBack(db)
            return value
        } catch {
            if !db.isBroken { giveBack(db) }
            throw error
        }
    }

    private func giveBack(_ db: PostgresConnection) {
        idle.withLock { if $0.count < keep { $0.append(db) } }
    }
}
