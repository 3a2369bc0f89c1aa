import Digests
import Reactor
import Synchronization
import TransferCore
import TransferEngine

/// The principals in force: the auth file's, the `--api-token` admins, or — with neither — the
/// anonymous admin. A reload swaps in a new set at once; requests in flight keep the principal
/// they were admitted as. State that outlives a reload (a principal's request budget, its
/// creations in flight) is carried over by name.
package final class PrincipalDirectory: BandwidthGroupResolver {
    /// One set of principals, indexed by the first 8 bytes of their token's SHA-256.
    private final class Snapshot: Sendable {
        let byHashPrefix: [UInt64: [(hash: [UInt8], principal: Principal)]]
        let principals: [Principal]
        let byName: [String: Principal]
        /// Those whose transfers share a bandwidth group: principals that may change sessions.
        let paced: [Principal]

        init(_ entries: [(hash: [UInt8], principal: Principal)]) {
            var index: [UInt64: [(hash: [UInt8], principal: Principal)]] = [:]
            for entry in entries { index[PrincipalDirectory.prefix(entry.hash), default: []].append(entry) }
            byHashPrefix = index
            principals = entries.map(\.principal)
            byName = Dictionary(entries.map { ($0.principal.name, $0.principal) }) { first, _ in first }
            paced = principals.filter { $0.bandwidth != nil && $0.role != .read }
        }
    }

    private let current: Locked<Snapshot>
    private let generationCounter = Atomic<UInt64>(0)
    /// The `--api-token` admins: in every snapshot, whatever the file says.
    private let tokenAdmins: [(hash: [UInt8], principal: Principal)]
    private let roots: AllowedRoots
    /// nil when a token is required; otherwise whom every request is from.
    private let anonymous: Principal?
    /// Cluster mode: the part of each principal's request rate this replica grants.
    package let share = ReplicaShare()

    /// `authFile` nil: no auth file is configured. Authentication is required as soon as there is
    /// an `--api-token` or an auth file (even one with no principals).
    package init(apiTokens: [String], authFile: AuthFile?, roots: AllowedRoots) {
        self.roots = roots
        tokenAdmins = apiTokens.enumerated().map { i, token in
            (Array(token.utf8).withUnsafeBytes { SHA256Digest.of($0) }, Principal.admin("token-\(i + 1)", roots: roots))
        }
        anonymous = apiTokens.isEmpty && authFile == nil ? Principal.admin("anonymous", roots: roots) : nil
        current = Locked(Snapshot(tokenAdmins))
        if let authFile { replace(with: authFile) }
    }

    package var requiresAuthentication: Bool { anonymous == nil }

    /// Changes whenever the principals were replaced.
    package var generation: UInt64 { generationCounter.load(ordering: .acquiring) }

    package var principals: [Principal] { current.withLock { $0 }.principals }

    /// Puts a newly read auth file in force.
    package func replace(with file: AuthFile) {
        let previous = current.withLock { $0 }.principals
        var entries = tokenAdmins
        for entry in file.entries {
            let old = previous.first { $0.name == entry.name }
            entries.append((entry.tokenSHA256, makePrincipal(entry, carryingOver: old)))
        }
        let snapshot = Snapshot(entries)
        current.withLock { $0 = snapshot }
        generationCounter.add(1, ordering: .releasing)
    }

    private func makePrincipal(_ entry: AuthFile.Entry, carryingOver old: Principal?) -> Principal {
        var rate: RequestRateLimiter?
        if let perSecond = entry.limits.requestsPerSecond, let burst = entry.limits.burst {
            // An unchanged limit keeps its bucket: a reload must not hand out a fresh burst.
            if let kept = old?.requestRate, kept.rate == perSecond, kept.burst == burst {
                rate = kept
            } else {
                rate = RequestRateLimiter(rate: perSecond, burst: burst, share: share)
            }
        }
        // The same group, at its new rate: transfers it paces now follow the new rate.
        var bandwidth: BandwidthGroup?
        if let perSecond = entry.limits.maxBytesPerSecond {
            bandwidth = old?.bandwidth ?? BandwidthGroup(name: entry.name, bytesPerSecond: perSecond)
            if bandwidth?.bytesPerSecond != perSecond { bandwidth?.setRate(perSecond) }
        }
        return Principal(name: entry.name, role: entry.role, namespaces: entry.namespaces, allowPaths: entry.allowPaths,
                         roots: entry.roots ?? roots, limits: entry.limits, requestRate: rate, quota: old?.quota ?? TaskQuota(),
                         bandwidth: bandwidth)
    }

    /// The principal a presented bearer token belongs to. Its SHA-256 is looked up by its first
    /// 8 bytes and compared whole in constant time: what timing could reveal is only whether some
    /// stored hash begins like the hash of the guess, which says nothing of any token.
    package func authenticate(_ token: UnsafeRawBufferPointer) -> Principal? {
        if let anonymous { return anonymous }
        let hash = SHA256Digest.of(token)
        let snapshot = current.withLock { $0 }
        guard let candidates = snapshot.byHashPrefix[PrincipalDirectory.prefix(hash)] else { return nil }
        var found: Principal?
        for candidate in candidates where ConstantTime.equals(candidate.hash, hash) { found = candidate.principal }
        return found
    }

    /// Whether the principal a long-lived request (an event stream) was admitted as may still see
    /// the session: a reload may have removed it or narrowed its namespaces since.
    package func stillSees(_ principal: Principal, _ identifier: String) -> Bool {
        if anonymous != nil { return true }
        return current.withLock { $0 }.byName[principal.name]?.sees(identifier) ?? false
    }

    /// The bandwidth groups a session's transfers share: those of the principals (other than
    /// `read` ones) with `max_bytes_per_second` whose namespaces hold it. Asked when a transfer
    /// starts; the engine asks again once `generation` changed.
    package func groups(forSession identifier: String) -> [BandwidthGroup] {
        current.withLock { $0 }.paced.compactMap { $0.sees(identifier) ? $0.bandwidth : nil }
    }

    /// The name the metrics count a session's tasks and bytes under: the principal whose namespace
    /// holding it is the longest (a `write` one before a `read` one), or `(admin)` when only
    /// admins reach it — parentheses are not allowed in a principal's name.
    package func owner(ofSession identifier: String) -> String {
        var best: (name: String, length: Int, writes: Bool)?
        for principal in current.withLock({ $0 }).principals where !principal.isAdmin {
            for namespace in principal.namespaces ?? [] where identifier.hasPrefix(namespace) {
                let candidate = (name: principal.name, length: namespace.utf8.count, writes: principal.role == .write)
                if let current = best, (current.length, current.writes ? 1 : 0) >= (candidate.length, candidate.writes ? 1 : 0) { continue }
                best = candidate
            }
        }
        return best?.name ?? PrincipalDirectory.adminOwner
    }

    /// The owner of sessions outside every tenant's namespaces.
    private static let adminOwner = "(admin)"

    /// With no authentication configured, everyone is the anonymous admin.
    package var anonymousPrincipal: Principal? { anonymous }

    private static func prefix(_ hash: [UInt8]) -> UInt64 {
        hash.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
