import Reactor

/// Every session in memory, by identifier. A durable session's tasks are here only until they
/// complete (see `TaskRunner.publish`); an ephemeral session's stay until they are deleted.
package final class SessionRegistry: @unchecked Sendable {
    private let sessions = Locked<[String: SessionState]>([:])

    package init() {}

    func session(_ identifier: String) -> SessionState? {
        sessions.withLock { $0[identifier] }
    }

    package var all: [SessionState] {
        sessions.withLock { Array($0.values) }
    }

    func insert(_ session: SessionState) {
        sessions.withLock { $0[session.identifier] = session }
    }

    /// Removes the session if it is still the one given (not a newer one of the same identifier).
    func remove(_ session: SessionState) {
        sessions.withLock { if $0[session.identifier] === session { $0[session.identifier] = nil } }
    }
}
