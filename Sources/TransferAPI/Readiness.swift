import Reactor
import Synchronization

/// What `/readyz` reports: each component registers a named check, and the service is ready when
/// all of them pass and it is not shutting down.
package final class Readiness: Sendable {
    private let checks = Locked<[(String, @Sendable () -> Bool)]>([])
    private let stopping = Atomic<Bool>(false)

    package init() {}

    package func register(_ name: String, _ check: @escaping @Sendable () -> Bool) {
        checks.withLock { $0.append((name, check)) }
    }

    package func markStopping() { stopping.store(true, ordering: .releasing) }

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Every check by name with its result.
    func evaluate() -> [(name: String, ok: Bool)] {
        let current = checks.withLock { $0 }
        return current.map { (name: $0.0, ok: $0.1()) }
    }
}
