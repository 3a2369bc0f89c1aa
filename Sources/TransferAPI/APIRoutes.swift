import HTTPServer
import TransferCore
import TransferModel

/// Every `/v1` route, each behind the access gate: the one thing the service asks of this module.
/// The route groups it registers stay internal to the module.
package struct APIRoutes {
    let coordinator: TaskCoordinator
    let gate: AccessGate
    let rates: TransferRates
    let version: String
    let startedAt: Timestamp
    let maxBlobBytes: Int64
    /// Seconds between Server-Sent Events heartbeats.
    let sseHeartbeat: Double
    /// Cluster mode: where each session is held, and how requests get there. nil: one node.
    let forwarding: SessionForwarding?

    package init(coordinator: TaskCoordinator, gate: AccessGate, rates: TransferRates, version: String,
                 startedAt: Timestamp, maxBlobBytes: Int64, sseHeartbeat: Double, forwarding: SessionForwarding? = nil)
    {
        self.forwarding = forwarding
        self.coordinator = coordinator
        self.gate = gate
        self.rates = rates
        self.version = version
        self.startedAt = startedAt
        self.maxBlobBytes = maxBlobBytes
        self.sseHeartbeat = sseHeartbeat
    }

    package func register(in routes: inout RouteTable) {
        // A path under /v1 that matches no route is checked too: 401 before 404, so an unauthorised
        // caller learns nothing of which paths exist.
        routes.guardUnmatched(prefix: "/v1", gate.check(nil))
        var table = APIRouteTable(routes, gate: gate, ledger: IdempotencyLedger(coordinator: coordinator),
                                   forwarding: forwarding)
        APIRoot(version: version, startedAt: startedAt).register(in: &table)
        WhoAmIRoute().register(in: &table)
        SessionRoutes(coordinator: coordinator).register(in: &table)
        SessionCookieRoutes(coordinator: coordinator).register(in: &table)
        TaskRoutes(coordinator: coordinator).register(in: &table)
        TaskActionRoutes(coordinator: coordinator).register(in: &table)
        TaskContentRoutes(coordinator: coordinator).register(in: &table)
        StatsRoute(coordinator: coordinator, rates: rates).register(in: &table)
        BlobRoutes(coordinator: coordinator, maxBlobBytes: maxBlobBytes).register(in: &table)
        EventRoutes(coordinator: coordinator, principals: gate.directory, heartbeat: sseHeartbeat).register(in: &table)
        routes = table.table
    }
}
