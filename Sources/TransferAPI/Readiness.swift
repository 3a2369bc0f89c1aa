import Reactor
import Synchronization

/// What `/readyz` reports: each component registers a named check, and the service is ready when
/// all of them pass and it is not shutting down.
package final class Readiness: Sendable {
    /// Where a check runs: on the caller's thread (the default), or — for one that may wait, as a
    /// store's does — wherever the function it registers with hands the check to.
    package typealias Runner = @Sendable (@escaping @Sendable () -> Void) -> Void

    private let checks = Locked<[(name: String, runsOn: Runner, check: @Sendable () -> Bool)]>([])
    private let stopping = Atomic<Bool>(false)

    package init() {}

    package func register(_ name: String, runsOn: @escaping Runner = { $0() }, _ check: @escaping @Sendable () -> Bool) {
        checks.withLock { $0.append((name, runsOn, check)) }
    }

    package func markStopping() { stopping.store(true, ordering: .releasing) }

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Every check by name with its result, handed to `answer` once the last has run (each where
    /// it registered to, one after another).
    func evaluate(answer: @escaping @Sendable ([(name: String, ok: Bool)]) -> Void) {
        let current = checks.withLock { $0 }
        @Sendable func run(from index: Int, _ results: [(name: String, ok: Bool)]) {
            guard index < current.count else { return answer(results) }
            let (name, runsOn, check) = current[index]
            runsOn { run(from: index + 1, results + [(name: name, ok: check())]) }
        }
        run(from: 0, [])
    }
}
