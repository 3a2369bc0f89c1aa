/// Cluster mode: the leases by which one replica at a time holds a session, kept in the shared
/// store beside the sessions themselves, and the replicas' addresses (where the others forward a
/// session's requests). A lease is the holder's while it renews it; once it expires, any replica
/// may claim it. Times are the store's clock, so replicas' clocks need not agree.
package protocol SessionLeasing: AnyObject, Sendable {
    /// Says this replica is alive at `address` (`host:port`) for the next `ttlSeconds`; returns
    /// how many replicas are alive, this one included.
    func heartbeat(replica: String, address: String, ttlSeconds: Double) throws -> Int
    /// Leases to `owner` up to `limit` sessions that no unexpired lease holds (a dead replica's),
    /// skipping those another replica is claiming at the same moment.
    func claimSessions(owner: String, ttlSeconds: Double, limit: Int) throws -> [String]
    /// Leases `session` to `owner` when it exists and no other replica holds an unexpired lease on
    /// it (or `owner` already does); returns whether `owner` holds it now.
    func claimSession(_ session: String, owner: String, ttlSeconds: Double) throws -> Bool
    /// Extends `owner`'s unexpired leases; returns the sessions it still holds.
    func renewLeases(owner: String, ttlSeconds: Double) throws -> Set<String>
    /// Gives leases up at once (a graceful shutdown), so another replica claims them without waiting.
    func releaseLeases(owner: String, sessions: [String]) throws
    /// The replica holding an unexpired lease on `session`, with its address; nil when none does.
    func leaseHolder(session: String) throws -> (owner: String, address: String)?
}
