import TransferEngine

/// The engine writes a durable session's cookie jar here when it changed (after the transfer that
/// changed it, before that transfer's outcome is handled, so a task's cookies are committed no
/// later than its completion), on reset and on flush.
extension TaskCoordinator: CookieStorage {
    package func save(_ cookies: [Cookie], session: String, done: @escaping @Sendable () -> Void) {
        store.commit([.replaceCookies(session: session, cookies)]) { [logger] result in
            if case .failure(let error) = result {
                logger.error("cannot store a session's cookies", metadata: ["session": .string(session), "error": "\(error)"])
            }
            done()
        }
    }
}
