import Postgres
import TransferModel
import TransferStore

/// Fencing (cluster mode): a replica writes for a session only while it holds the session's lease.
/// Every batch naming sessions first checks, in its own transaction, that this replica holds an
/// unexpired lease on each, and locks those lease rows (`FOR SHARE`) so no other replica can claim
/// one before the batch commits; a replica whose lease expired — it stalled, or lost the database
/// for longer than the lease — finds its batches refused with `StoreError.fenced` and stores
/// nothing more for the session, its tasks' completions included.
struct LeaseFence {
    let owner: String
    /// How long a lease taken by a batch lasts (the owner's heartbeat renews it).
    let ttlSeconds: Double

    /// A session the batch creates or re-attaches (`upsertSession`) with no live lease, or with an
    /// expired one, is leased to the owner by the same batch: a new session belongs to the replica
    /// that made it.
    func check(_ changes: [StoreChange], _ db: PostgresConnection) throws {
        let (named, upserted) = LeaseFence.sessions(of: changes)
        guard !named.isEmpty else { return }
        let rows = try db.query("""
            WITH held AS (
              SELECT session FROM session_leases WHERE session = ANY($1::text[]) AND owner = $2 AND expires_at > now()
              FOR SHARE),
            taken AS (
              INSERT INTO session_leases (session, owner, expires_at)
              SELECT s, $2, now() + make_interval(secs => $4) FROM unnest($3::text[]) AS s WHERE s NOT IN (SELECT session FROM held)
              ON CONFLICT (session) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
                WHERE session_leases.expires_at <= now()
              RETURNING session)
            SELECT session FROM held UNION ALL SELECT session FROM taken
            """, [PostgresText.array(named.map { Optional($0) }), owner, PostgresText.array(upserted.map { Optional($0) }),
                  String(ttlSeconds)])
        let held = Set((0..<rows.count).map { rows.text($0, 0)! })
        if let missing = named.first(where: { !held.contains($0) }) { throw StoreError.fenced(session: missing) }
    }

    /// The sessions `changes` write for, in first-named order, and those among them it upserts.
    /// Blobs, replies and retention name no session: they are the service's, not a session's.
    static func sessions(of changes: [StoreChange]) -> (named: [String], upserted: [String]) {
        var named: [String] = []
        var seen: Set<String> = []
        var upserted: [String] = []
        func name(_ session: String) { if seen.insert(session).inserted { named.append(session) } }
        for change in changes {
            switch change {
            case .upsertSession(let row):
                name(row.identifier)
                upserted.append(row.identifier)
            case .deleteSession(let session), .setDelivered(let session, _), .setAcked(let session, _),
                 .replaceCookies(let session, _), .updateState(let session, _, _, _), .updateDetails(let session, _, _, _),
                 .deleteTask(let session, _):
                name(session)
            case .insertTasks(let tasks, _): tasks.forEach { name($0.session) }
            case .updateTask(let task, _), .updateTaskKeepingState(let task, _): name(task.session)
            case .flushProgress(let rows): rows.forEach { name($0.session) }
            case .insertEvents(let events): events.forEach { name($0.session) }
            case .recordAttempts(let attempts): attempts.forEach { name($0.session) }
            case .deleteEventsOlder, .insertBlob, .deleteBlob, .keepReply: continue
            }
        }
        return (named, upserted)
    }
}
