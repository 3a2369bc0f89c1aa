import TransferCore

/// Who a request comes from: a calling service (from the auth file), an `--api-token` holder, or —
/// when no authentication is configured — the anonymous admin. What it may see follows from its
/// namespaces, what it may do from its role.
package final class Principal: Sendable {
    package enum Role: String, Sendable {
        /// Reads and watches (GET, long-poll, Server-Sent Events); changes nothing.
        case read
        /// Everything inside its namespaces.
        case write
        /// Everything, in every namespace.
        case admin
    }

    package let name: String
    package let role: Role
    /// Session identifier prefixes; nil for an admin, who sees every session.
    package let namespaces: [String]?
    /// The `allow_paths` it was given; nil when it uses the service's `--allow-path` roots.
    package let allowPaths: [String]?
    /// Where its destinations, `from_file` sources and TLS files must lie.
    package let roots: AllowedRoots
    package let limits: PrincipalLimits
    /// Its request budget, when `limits.requests_per_second` is set (kept across reloads).
    let requestRate: RequestRateLimiter?
    /// Creations being committed, counted against `max_unfinished_tasks` (kept across reloads).
    let quota: TaskQuota

    init(name: String, role: Role, namespaces: [String]?, allowPaths: [String]?, roots: AllowedRoots,
         limits: PrincipalLimits, requestRate: RequestRateLimiter?, quota: TaskQuota)
    {
        self.name = name
        self.role = role
        self.namespaces = namespaces
        self.allowPaths = allowPaths
        self.roots = roots
        self.limits = limits
        self.requestRate = requestRate
        self.quota = quota
    }

    /// An admin without limits (an `--api-token` holder, or everyone when nothing is configured).
    static func admin(_ name: String, roots: AllowedRoots) -> Principal {
        Principal(name: name, role: .admin, namespaces: nil, allowPaths: nil, roots: roots, limits: PrincipalLimits(),
                  requestRate: nil, quota: TaskQuota())
    }

    package var isAdmin: Bool { role == .admin }

    /// Whether a request with this method changes something (and so needs `write` or `admin`).
    static func changes(_ method: String) -> Bool { method != "GET" && method != "HEAD" }

    /// Whether the session with this identifier is one it may see.
    package func sees(_ identifier: String) -> Bool {
        guard let namespaces else { return true }
        for prefix in namespaces where identifier.hasPrefix(prefix) { return true }
        return false
    }

    /// Whether a blob stored by `owner` (nil: stored before blobs had owners) is one it may see.
    func owns(blobStoredBy owner: String?) -> Bool { isAdmin || owner == name }

    /// The name whose blobs it may use as request bodies; nil for an admin, who may use any.
    var blobOwnerFilter: String? { isAdmin ? nil : name }
}

/// A principal's limits from the auth file; nil means none.
package struct PrincipalLimits: Sendable, Equatable {
    package var requestsPerSecond: Double?
    package var burst: Int?
    package var maxUnfinishedTasks: Int?
    package var maxBytesPerSecond: Int64?

    package init(requestsPerSecond: Double? = nil, burst: Int? = nil, maxUnfinishedTasks: Int? = nil, maxBytesPerSecond: Int64? = nil) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = burst
        self.maxUnfinishedTasks = maxUnfinishedTasks
        self.maxBytesPerSecond = maxBytesPerSecond
    }
}
