import Reactor
import Synchronization

/// Cluster mode: the share of a principal's request rate each replica grants. Each replica's
/// bucket refills at rate / replicas and holds burst / replicas, so that however requests are
/// spread over the replicas, together they grant what the auth file says. Outside a cluster the
/// share is whole.
///
/// The shares add up to at most the whole only while every replica counts every other. A replica
/// counts the others at its heartbeat, so one that just joined is unknown to the rest until their
/// next heartbeat: meanwhile they would grant 1/n each and it 1/(n+1) — with two replicas started
/// together, the first one still counting itself alone let a whole burst through on top of the
/// second one's half. So a joining replica grants nothing until the others have all had a
/// heartbeat since it announced itself (`settle`).
package final class ReplicaShare: Sendable {
    private let replicas = Atomic<Int>(1)
    /// Monotonic nanoseconds from which this replica grants its share: 0 outside a cluster,
    /// `.max` in a cluster until its first heartbeat counted the replicas.
    private let grantsFrom = Atomic<UInt64>(0)

    package init() {}

    /// This replica is one of a cluster: it grants nothing until it has joined (`set`).
    package func enterCluster() {
        grantsFrom.store(.max, ordering: .releasing)
    }

    /// The replicas alive now (the membership's heartbeat counts them); at least this one. The
    /// first count is this replica's joining: it grants from `settle` seconds later on, once each
    /// other replica has had a heartbeat that counts it.
    package func set(replicas count: Int, settle: Double, now: UInt64 = MonotonicClock.now()) {
        replicas.store(max(1, count), ordering: .releasing)
        _ = grantsFrom.compareExchange(expected: .max, desired: now + UInt64(settle * 1e9), ordering: .acquiringAndReleasing)
    }

    /// The fraction of the rate and burst this replica grants at `now`: none while it joins.
    func fraction(now: UInt64) -> Double {
        now < grantsFrom.load(ordering: .acquiring) ? 0 : 1 / Double(replicas.load(ordering: .acquiring))
    }
}
