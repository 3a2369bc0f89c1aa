import Synchronization

/// Cluster mode: the share of a principal's request rate each replica grants. Requests are spread
/// over the replicas (a load balancer in front), so each one's bucket refills at rate / replicas
/// and holds burst / replicas; together they grant what the auth file says. Outside a cluster the
/// share is whole.
package final class ReplicaShare: Sendable {
    private let replicas = Atomic<Int>(1)

    package init() {}

    /// The replicas alive now (the membership's heartbeat counts them); at least this one.
    package func set(replicas count: Int) {
        replicas.store(max(1, count), ordering: .relaxed)
    }

    var fraction: Double { 1 / Double(replicas.load(ordering: .relaxed)) }
}
