import Dispatch
import Postgres
import Reactor
import TransferStore

/// The one thread that writes, on a connection of its own, committing in groups: everything
/// queued goes into one transaction, each batch inside a savepoint so a failing batch rolls back
/// alone, and the callers are answered in submission order on a queue of their own.
///
/// When the server is gone (a restart, a failover), the group fails — nothing of it is stored —
/// and the next group reconnects first: the store recovers by itself once the server is back.
final class PostgresWriter: @unchecked Sendable {
    typealias Work = (PostgresConnection) throws -> CommitReport
    typealias Completion = @Sendable (Result<CommitReport, Error>) -> Void

    private struct Pending {
        let work: Work
        let completion: Completion
    }

    private let connector: Connector
    /// Only the writer thread touches it.
    private var connection: PostgresConnection?
    private var thread: GroupingThread<Pending>!
    private let completions = DispatchQueue(label: "transferd.postgres.completions")
    /// Told how long each group's transaction took, `BEGIN` to `COMMIT`, in nanoseconds.
    private let observeCommit: @Sendable (UInt64) -> Void

    init(connector: Connector, connection: PostgresConnection, observeCommit: @escaping @Sendable (UInt64) -> Void) {
        self.connector = connector
        self.connection = connection
        self.observeCommit = observeCommit
        thread = GroupingThread(name: "pg-writer", maxGroup: 4096) { self.commit($0) }
    }

    func submit(_ work: @escaping Work, completion: @escaping Completion) {
        if !thread.submit(Pending(work: work, completion: completion)) { completion(.failure(StoreError.closed)) }
    }

    /// Commits what is queued, then stops once every completion has run.
    func close() {
        thread.close()
        completions.sync {}
    }

    /// Savepoint handling rides with the statements around it (`RELEASE b; SAVEPOINT b` is one
    /// round trip), so a batch costs its own statements and one more.
    private func commit(_ group: [Pending]) {
        var results: [Result<CommitReport, Error>] = []
        results.reserveCapacity(group.count)
        do {
            let db = try begun()
            let began = MonotonicClock.now()
            do {
                for (i, item) in group.enumerated() {
                    do {
                        results.append(.success(try item.work(db)))
                    } catch let error as PostgresError where error.isConnectionBroken {
                        throw error
                    } catch {
                        try db.execute("ROLLBACK TO b")
                        results.append(.failure(error))
                    }
                    try db.execute(i == group.count - 1 ? "RELEASE b; COMMIT" : "RELEASE b; SAVEPOINT b")
                }
                observeCommit(MonotonicClock.now() - began)
            } catch {
                // The transaction as a whole failed (the server went away): nothing of it is stored.
                if !db.isBroken { try? db.execute("ROLLBACK") }
                throw error
            }
        } catch {
            deliver(group, group.map { _ in .failure(error) })
            return
        }
        deliver(group, results)
    }

    /// The connection with a transaction begun. A connection idle while the server restarted
    /// learns it is broken only here: nothing was sent on it yet, so a new one is made and tried.
    private func begun() throws -> PostgresConnection {
        let db = try connected()
        do {
            try db.execute("BEGIN; SAVEPOINT b")
            return db
        } catch where error.isConnectionBroken {
            let fresh = try connected()
            try fresh.execute("BEGIN; SAVEPOINT b")
            return fresh
        }
    }

    /// The connection, made again when the last one broke.
    private func connected() throws -> PostgresConnection {
        if let connection, !connection.isBroken { return connection }
        connection = nil
        let fresh = try connector.connect()
        connection = fresh
        return fresh
    }

    /// `@unchecked Sendable`: once handed to the completion queue, only it touches them.
    private struct Outcomes: @unchecked Sendable {
        let group: [Pending]
        let results: [Result<CommitReport, Error>]
    }

    private func deliver(_ group: [Pending], _ results: [Result<CommitReport, Error>]) {
        let outcomes = Outcomes(group: group, results: results)
        completions.async {
            for (item, result) in zip(outcomes.group, outcomes.results) { item.completion(result) }
        }
    }
}
