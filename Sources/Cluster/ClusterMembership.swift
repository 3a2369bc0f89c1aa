import Logging
import Reactor
import TransferCore
import TransferEngine
import TransferStore

/// This replica's part in a cluster: every `interval` it says it is alive, renews the leases of
/// the sessions it holds, lets go of any it lost, and claims sessions no live replica holds (a
/// dead one's), bringing them into memory. What the leases allow is `LeaseKeeper`'s to say; this
/// only talks to the store and the coordinator. Store calls block, so they run on a thread of
/// their own; the deadline is also checked from the coordinator's clock, so a store call that
/// hangs cannot keep this replica acting past its leases. The same deadline holds the engine's
/// writes to files (`WriteFence`): a check on a timer comes too late for a process that was frozen
/// and wakes up with bytes waiting in its sockets, a check before each write does not.
package final class ClusterMembership: @unchecked Sendable {
    package let replica: String
    package let address: String
    private let leasing: any SessionLeasing
    private let coordinator: TaskCoordinator
    private let logger: Logger
    /// Told how many replicas are alive after each heartbeat (request rates are shared by them).
    private let replicasAlive: @Sendable (Int) -> Void
    private let interval: Double
    private let keeper: Locked<LeaseKeeper>
    private let loop = EventLoop(name: "cluster")
    private let stopped = Locked(false)
    /// The last failure logged, so an unreachable store logs once, not every second.
    private let lastFailure = Locked<String?>(nil)

    /// Sessions claimed at once: a dead replica's are taken over a batch a turn.
    static let claimBatch = 64

    package init(replica: String, address: String, leasing: any SessionLeasing, coordinator: TaskCoordinator,
                 leaseTimeout: Double, logger: Logger, replicasAlive: @escaping @Sendable (Int) -> Void)
    {
        self.replicasAlive = replicasAlive
        self.replica = replica
        self.address = address
        self.leasing = leasing
        self.coordinator = coordinator
        self.logger = logger
        // Renewed several times within a lease, so one slow or failed round costs nothing; the
        // replica stops on its own a fifth of a lease before the store's expiry.
        interval = ClusterMembership.heartbeatInterval(leaseTimeout: leaseTimeout)
        keeper = Locked(LeaseKeeper(ttl: leaseTimeout, margin: leaseTimeout / 5))
    }

    /// Seconds between heartbeats (and lease renewals): renewed several times within a lease.
    package static func heartbeatInterval(leaseTimeout: Double) -> Double { min(1, leaseTimeout / 5) }

    /// Joins the cluster: the first round runs before this returns, so a replica is ready only
    /// once it has said where it is and taken what was waiting for a holder.
    package func start() {
        round()
        loop.start()
        loop.execute { [self] in scheduleRound() }
        coordinator.clock.execute { [self] in scheduleDeadlineCheck() }
    }

    /// Leaves the cluster at a graceful shutdown, once the held sessions' state is stored: their
    /// leases are given up, so other replicas take them over at once instead of after a timeout.
    package func stop() {
        stopped.withLock { $0 = true }
        loop.stopAndJoin()
        let held = coordinator.heldSessions
        do {
            try leasing.releaseLeases(owner: replica, sessions: held)
        } catch {
            logger.warning("could not give leases up at shutdown; they expire instead", metadata: ["error": "\(error)"])
        }
    }

    /// Whether the leases still let this replica act (readiness: a replica past its deadline is not ready).
    package var holdsLeases: Bool {
        keeper.withLock { $0.mayAct(at: ClusterMembership.now()) }
    }

    private func scheduleRound() {
        _ = loop.scheduleTimer(at: MonotonicClock.after(seconds: interval)) { [self] in
            guard !stopped.withLock({ $0 }) else { return }
            round()
            scheduleRound()
        }
    }

    private func scheduleDeadlineCheck() {
        _ = coordinator.clock.scheduleTimer(at: MonotonicClock.after(seconds: interval)) { [self] in
            guard !stopped.withLock({ $0 }) else { return }
            let holding = Set(coordinator.heldSessions)
            perform(keeper.withLock { $0.handle(.checked(at: ClusterMembership.now(), holding: holding)) })
            scheduleDeadlineCheck()
        }
    }

    /// One round: heartbeat, renew, claim.
    private func round() {
        let sentAt = ClusterMembership.now()
        let before = Set(coordinator.heldSessions)
        do {
            replicasAlive(try leasing.heartbeat(replica: replica, address: address, ttlSeconds: keeper.withLock { $0.ttl }))
            let held = try leasing.renewLeases(owner: replica, ttlSeconds: keeper.withLock { $0.ttl })
            let after = Set(coordinator.heldSessions)
            let (actions, actsUntil) = keeper.withLock { keeper in
                (keeper.handle(.renewed(sentAt: sentAt, before: before, held: held, after: after)), keeper.actsUntil)
            }
            // Sessions lost are let go (their transfers fenced) before the fence moves on for
            // the others: a replica thawed past its deadline renews, and must not write for the
            // sessions that renewal no longer holds.
            perform(actions)
            if let actsUntil { coordinator.writeFence?.allow(until: actsUntil) }
            if holdsLeases {
                let claimed = try leasing.claimSessions(owner: replica, ttlSeconds: keeper.withLock { $0.ttl },
                                                        limit: ClusterMembership.claimBatch)
                perform(keeper.withLock { $0.handle(.claimed(claimed)) })
            }
            if lastFailure.withLock({ $0 }) != nil {
                lastFailure.withLock { $0 = nil }
                logger.notice("cluster store reachable again")
            }
        } catch {
            let text = "\(error)"
            let isNew = lastFailure.withLock { last in
                defer { last = text }
                return last != text
            }
            if isNew { logger.error("cluster round failed", metadata: ["error": .string(text)]) }
        }
        let holding = Set(coordinator.heldSessions)
        perform(keeper.withLock { $0.handle(.checked(at: ClusterMembership.now(), holding: holding)) })
    }

    private func perform(_ actions: [LeaseKeeper.Action]) {
        for action in actions {
            switch action {
            case .release(let sessions):
                for session in sessions { coordinator.release(session) }
            case .adopt(let sessions):
                do {
                    try coordinator.adopt(sessions)
                } catch {
                    // Another replica may manage; this one gives the leases back rather than
                    // holding sessions it does not run.
                    logger.error("could not take sessions over", metadata: ["error": "\(error)", "sessions": "\(sessions)"])
                    try? leasing.releaseLeases(owner: replica, sessions: sessions)
                }
            }
        }
    }

    /// The clock the deadline is kept on, the same as the write fence's: it runs on while the
    /// machine is suspended, as the store's does.
    private static func now() -> Double { LeaseClock.seconds() }
}
