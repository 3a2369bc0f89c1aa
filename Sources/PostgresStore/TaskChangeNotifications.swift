import Postgres
import TransferStore

/// Cluster mode: the other replicas keep copies of completed tasks' replies (a completed task's GET
/// is answered wherever it arrives). What can still change such a reply — `PATCH` of its priority
/// or description, its deletion, its session's removal — is notified, in the same transaction, on
/// `channel` as `session/task` (or `session/` for a whole session), so they drop their copies.
enum TaskChangeNotifications {
    static let channel = "transferd_tasks"

    /// The keys `changes` would make stale; empty for the batches of a task's ordinary life.
    static func keys(of changes: [StoreChange]) -> [String] {
        changes.compactMap { change in
            switch change {
            case .updateDetails(let session, let id, _, _), .deleteTask(let session, let id): "\(session)/\(id)"
            case .deleteSession(let session): "\(session)/"
            default: nil
            }
        }
    }

    static func notify(_ changes: [StoreChange], _ db: PostgresConnection) throws {
        let keys = keys(of: changes)
        guard !keys.isEmpty else { return }
        _ = try db.query("SELECT pg_notify('\(channel)', key) FROM unnest($1::text[]) AS key",
                         [PostgresText.array(keys.map { Optional($0) })])
    }
}
