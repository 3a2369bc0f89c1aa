import Postgres
import Reactor

/// Connections for reads from any thread, one caller at a time each (libpq's connections are not
/// thread-safe): borrowed from the idle ones, or made when none is idle, and returned after. A
/// connection that broke is dropped instead of returned, so the next read connects afresh — that
/// is how reads recover when the server comes back.
final class PostgresReaders: @unchecked Sendable {
    private let url: String
    private let idle = Locked<[PostgresConnection]>([])
    /// Idle connections kept beyond this are closed: a burst of reads must not hold the server's
    /// connections for ever.
    private let keep: Int

    init(url: String, keep: Int = 8) {
        self.url = url
        self.keep = keep
    }

    /// A read that meets an idle connection broken since its last use (the server restarted
    /// meanwhile) runs again once on a new one: reads change nothing, so running one twice is safe.
    func read<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        guard let db = idle.withLock({ $0.popLast() }) else { return try read(on: PostgresConnection(url: url), body) }
        do {
            return try read(on: db, body)
        } catch let error as PostgresError where error.isConnectionBroken {
            idle.withLock { $0.removeAll() }  // they are as stale as this one
            return try read(on: PostgresConnection(url: url), body)
        }
    }

    private func read<T>(on db: PostgresConnection, _ body: (PostgresConnection) throws -> T) throws -> T {
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
