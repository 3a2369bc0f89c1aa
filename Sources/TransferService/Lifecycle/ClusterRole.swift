import Cluster
import Glibc
import Logging
import PostgresStore
import ReplicaForwarding
import TransferAPI
import TransferCore

/// This replica's part in a cluster (`--database`), as the service wires it: its leases
/// (`ClusterMembership`), where a session's requests go (`ClusterPlacement`, `ReplicaForwarder`),
/// and the notifications that wake its readers of other replicas' sessions.
struct ClusterRole {
    let membership: ClusterMembership
    let forwarder: ReplicaForwarder
    let forwarding: SessionForwarding
    let notifications: EventNotifications

    init(settings: ClusterSettings, replica: String, url: String, store: PostgresTransferStore, coordinator: TaskCoordinator,
         principals: PrincipalDirectory, secret: [UInt8], logger: Logger)
    {
        coordinator.sharesStore = true
        principals.share.enterCluster()
        // Two heartbeats: every other replica has had one since this one's first, with time to spare
        // for a slow round, before this one grants its share of any principal's rate.
        let settle = 2 * ClusterMembership.heartbeatInterval(leaseTimeout: settings.leaseTimeout)
        membership = ClusterMembership(replica: replica, address: settings.advertiseAddress, leasing: store, coordinator: coordinator,
                                       leaseTimeout: settings.leaseTimeout, logger: logger,
                                       replicasAlive: { [share = principals.share] in share.set(replicas: $0, settle: settle) })
        forwarder = ReplicaForwarder(advertisedAddress: settings.advertiseAddress, proof: ForwardingProof(secret: secret))
        forwarding = SessionForwarding(placement: ClusterPlacement(membership: membership, leasing: store, coordinator: coordinator,
                                                                   leaseTimeout: settings.leaseTimeout),
                                       forwarder: forwarder)
        notifications = EventNotifications(url: url, coordinator: coordinator, logger: logger)
        logger.info("cluster mode", metadata: ["replica": .string(replica), "advertise_address": .string(settings.advertiseAddress),
                                               "lease_timeout_s": .stringConvertible(settings.leaseTimeout)])
    }

    /// Joins the cluster: says where this replica is, and takes over what no live replica holds.
    func start() {
        membership.start()
        notifications.start()
    }

    /// Once the held sessions' state is stored: their leases go back, and forwarding stops.
    func stop() {
        notifications.stop()
        membership.stop()
        forwarder.shutdown()
    }

    /// A name for this run of this replica in the leases: the host's name (a pod's, in
    /// Kubernetes) for whoever reads the tables, and random bytes, so a restarted replica never
    /// mistakes its predecessor's leases for its own.
    static func replicaIdentifier() -> String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "replica"
        var generator = SystemRandomNumberGenerator()
        let suffix = (0..<6).map { _ in String(UInt8.random(in: 0...255, using: &generator), radix: 16) }.joined()
        return "\(host)-\(suffix)"
    }
}
