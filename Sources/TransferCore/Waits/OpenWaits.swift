import Reactor

/// The long-polls waiting right now (`GET …/tasks/{task}?wait=`, `GET …/events?wait=`), each with
/// how to answer it early. At shutdown every one is answered with what there is, instead of being
/// cut off when the server closes its connections: a client then sees the current state, not a
/// reset, and polls again elsewhere.
final class OpenWaits: Sendable {
    private struct State {
        var next: UInt64 = 0
        var waits: [UInt64: @Sendable () -> Void] = [:]
        var ended = false
    }

    private let state = Locked(State())

    /// Keeps `answerNow` until `remove`; nil when waits have ended (the caller answers at once).
    func add(_ answerNow: @escaping @Sendable () -> Void) -> UInt64? {
        state.withLock { s in
            guard !s.ended else { return nil }
            s.next += 1
            s.waits[s.next] = answerNow
            return s.next
        }
    }

    func remove(_ id: UInt64) {
        _ = state.withLock { $0.waits.removeValue(forKey: id) }
    }

    /// Answers every open wait now, and every later one at once.
    func end() {
        let all = state.withLock { s in
            s.ended = true
            defer { s.waits = [:] }
            return Array(s.waits.values)
        }
        for answerNow in all { answerNow() }
    }

}
