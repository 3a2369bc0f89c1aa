import Reactor
import ReplicaForwarding
import TransferCore
import TransferStore

/// Where a session's requests are served in cluster mode: here when this replica holds the
/// session; at the holder's address when another one does; and when none does (its holder died,
/// its lease has not been claimed yet), here after claiming it on the spot, so the request finds
/// the session with its tasks rather than waiting for the next claiming round.
///
/// Memory answers for the sessions held here and the holders looked up in the last second
/// (`knownPlace`, on the server's threads); the rest are looked up in the store off those
/// threads (`lookUp`). Answers are kept for a moment because a lease moves only when its holder
/// dies or leaves, and a request that reaches a former holder is served there as a request for a
/// session it does not hold (its own look-up sends it on, or it claims the session).
package final class ClusterPlacement: SessionPlacement, @unchecked Sendable {
    private let membership: ClusterMembership
    private let leasing: any SessionLeasing
    private let coordinator: TaskCoordinator
    private let leaseTimeout: Double
    private let remembered = Locked<[String: (address: String, until: UInt64)]>([:])
    /// How long an answer is kept.
    static let memory = 1.0
    /// Holders remembered at most; beyond that the oldest half is forgotten.
    static let rememberedLimit = 10_000

    package init(membership: ClusterMembership, leasing: any SessionLeasing, coordinator: TaskCoordinator, leaseTimeout: Double) {
        self.membership = membership
        self.leasing = leasing
        self.coordinator = coordinator
        self.leaseTimeout = leaseTimeout
    }

    package func knownPlace(_ session: String) -> SessionPlace? {
        if coordinator.holds(session) { return .here }
        guard let known = remembered.withLock({ $0[session] }), known.until > MonotonicClock.now() else { return nil }
        return .replica(address: known.address)
    }

    package func lookUp(_ session: String) -> SessionPlace {
        if coordinator.holds(session) { return .here }
        do {
            if let holder = try leasing.leaseHolder(session: session), holder.owner != membership.replica {
                // At this replica's own address but not this replica: the process it replaced
                // (killed, restarted), whose lease has yet to expire.
                if holder.address == membership.address { return .moving }
                remember(session, at: holder.address, now: MonotonicClock.now())
                return .replica(address: holder.address)
            }
            // Held by nobody alive, or by this replica whose claiming round has not brought it in yet.
            if try leasing.claimSession(session, owner: membership.replica, ttlSeconds: leaseTimeout) {
                try coordinator.adopt([session])
            }
        } catch {
            // The store is unreachable: nobody can tell where the session is, and this replica
            // does not have it in memory, so "here" would answer that it does not exist.
            return .unknown
        }
        return .here
    }

    private func remember(_ session: String, at address: String, now: UInt64) {
        let until = now + UInt64(ClusterPlacement.memory * 1e9)
        remembered.withLock { known in
            if known.count >= ClusterPlacement.rememberedLimit {
                known = known.filter { $0.value.until > now }
            }
            known[session] = (address, until)
        }
    }
}
