/// What a replica's sessions' leases mean for what it may keep doing, as a value: no store, no
/// clock, no threads (`ClusterMembership` feeds it what happened and carries out what it answers).
///
/// The store decides who holds a lease by its own clock; a replica cannot read that clock, so it
/// keeps a conservative deadline of its own: a renewal sent at `t` (monotonic, local) that
/// succeeded keeps the leases at least until `t + ttl` in store time, and this replica acts only
/// until `t + ttl - margin`. Past that, without a newer renewal — the store unreachable, the
/// renewal stuck — it lets everything go before another replica may claim it, which is what
/// keeps a task from running on two replicas at once.
package struct LeaseKeeper: Sendable, Equatable {
    package let ttl: Double
    /// How long before the store's expiry this replica stops on its own (clock drift, a slow stop).
    package let margin: Double
    /// Monotonic seconds until which the last successful renewal lets this replica act.
    package private(set) var actsUntil: Double?
    /// Sessions the last renewal found leased to this replica but not in its memory.
    private var strays: Set<String> = []

    package init(ttl: Double, margin: Double) {
        precondition(margin < ttl, "the margin must leave some of the lease")
        self.ttl = ttl
        self.margin = margin
    }

    package enum Event: Sendable, Equatable {
        /// A renewal sent at `sentAt`, when this replica held `before` in memory, answered that it
        /// still holds `held`; `after` is what is in memory once it answered. Sessions adopted or
        /// created after it was sent are not released by it.
        case renewed(sentAt: Double, before: Set<String>, held: Set<String>, after: Set<String>)
        /// A renewal (or any look at the store) failed, or time passed: judged against the deadline.
        case checked(at: Double, holding: Set<String>)
        /// Sessions the store leased to this replica (a dead replica's, claimed).
        case claimed([String])
    }

    package enum Action: Sendable, Equatable {
        /// Stop acting for these and forget them (`TaskCoordinator.release`).
        case release([String])
        /// Bring these into memory (`TaskCoordinator.adopt`).
        case adopt([String])
    }

    package mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .renewed(let sentAt, let before, let held, let after):
            actsUntil = max(actsUntil ?? sentAt, sentAt + ttl - margin)
            let lost = before.subtracting(held).sorted()
            // Leased here but not in memory — let go when a renewal ran late, though the store
            // kept the leases — is taken back once two renewals in a row find it so (a session
            // being created is leased a moment before it is in memory).
            let stray = held.subtracting(after)
            let adopt = stray.intersection(strays).sorted()
            strays = stray
            return (lost.isEmpty ? [] : [.release(lost)]) + (adopt.isEmpty ? [] : [.adopt(adopt)])
        case .checked(let at, let holding):
            guard !holding.isEmpty, !mayAct(at: at) else { return [] }
            return [.release(holding.sorted())]
        case .claimed(let sessions):
            return sessions.isEmpty ? [] : [.adopt(sessions)]
        }
    }

    /// Whether a lease renewed lately still covers this moment; before any renewal, nothing is held.
    package func mayAct(at now: Double) -> Bool {
        guard let actsUntil else { return false }
        return now < actsUntil
    }
}
