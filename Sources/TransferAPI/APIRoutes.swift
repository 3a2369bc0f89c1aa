import HTTPServer
import TransferCore
import TransferModel

/// Every `/v1` route, behind the bearer check: the one thing the service asks of this module. The
/// route groups it registers stay internal to the module.
package struct APIRoutes {
    let coordinator: TaskCoordinator
    let authenticator: Authenticator
    let rates: TransferRates
    let version: String
    let startedAt: Timestamp
    let maxBlobBytes: Int64
    /// Seconds between Server-Sent Events heartbeats.
    let sseHeartbeat: Double

    package init(coordinator: TaskCoordinator, authenticator: Authenticator, rates: TransferRates, version: String,
                 startedAt: Timestamp, maxBlobBytes: Int64, sseHeartbeat: Double)
    {
        self.coordinator = coordinator
        self.authenticator = authenticator
        self.rates = rates
        self.version = version
        self.startedAt = startedAt
        self.maxBlobBytes = maxBlobBytes
        self.sseHeartbeat = sseHeartbeat
    }

    package func register(in table: inout RouteTable) {
        let auth: RequestGuard = authenticator.check
        // A path under /v1 that matches no route is checked too: 401 before 404, so an unauthorised
        // caller learns nothing of which paths exist.
        table.guardUnmatched(prefix: "/v1", auth)
        APIRoot(version: version, startedAt: startedAt).register(in: &table, guard: auth)
        SessionRoutes(coordinator: coordinator).register(in: &table, guard: auth)
        SessionCookieRoutes(coordinator: coordinator).register(in: &table, guard: auth)
        TaskRoutes(coordinator: coordinator).register(in: &table, guard: auth)
        TaskActionRoutes(coordinator: coordinator).register(in: &table, guard: auth)
        TaskContentRoutes(coordinator: coordinator).register(in: &table, guard: auth)
        StatsRoute(coordinator: coordinator, rates: rates).register(in: &table, guard: auth)
        BlobRoutes(coordinator: coordinator, maxBlobBytes: maxBlobBytes).register(in: &table, guard: auth)
        EventRoutes(coordinator: coordinator, heartbeat: sseHeartbeat).register(in: &table, guard: auth)
    }
}
