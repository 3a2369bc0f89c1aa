import Logging
import TransferEngine
import TransferModel
import TransferStore
import TransferVocabulary

/// The engine's side of each session: its settings and its cookie jar. A durable session's jar
/// is kept in the store: the engine writes it here when it changed (after the transfer that
/// changed it, before that transfer's outcome is handled, so a task's cookies are committed no
/// later than its completion), on reset and on flush.
final class EngineSessions: CookieStorage {
    private let engine: TransferEngine
    private let store: any TransferStore
    private let roots: AllowedRoots
    private let logger: Logger

    init(engine: TransferEngine, store: any TransferStore, roots: AllowedRoots, logger: Logger) {
        self.engine = engine
        self.store = store
        self.roots = roots
        self.logger = logger
    }

    /// Applies a session's settings to the engine. `cookies`: nil keeps the session's jar, `[]`
    /// starts it empty.
    func configure(_ session: SessionState, settings: SessionSettings, cookies: [Cookie]?) {
        engine.configure(session: session.identifier, settings: settings,
                         cookieStorage: session.mode.isDurable ? self : nil, cookies: cookies)
    }

    /// At start, for a session loaded from the store: its stored cookies, and its TLS files read
    /// again (`SessionSettings.restoring`).
    func restore(_ session: SessionState) {
        let (settings, unreadable) = SessionSettings.restoring(session.locked { session.configuration }, roots: roots)
        if let unreadable {
            logger.error("cannot read a session's TLS files; its transfers will fail",
                         metadata: ["session": .string(session.identifier), "error": .string(unreadable.detail)])
        }
        var cookies: [Cookie] = []
        do {
            cookies = try store.loadCookies(session: session.identifier)
        } catch {
            logger.error("cannot load a session's cookies", metadata: ["session": .string(session.identifier), "error": "\(error)"])
        }
        configure(session, settings: settings, cookies: cookies)
    }

    func save(_ cookies: [Cookie], session: String, done: @escaping @Sendable () -> Void) {
        store.commit([.replaceCookies(session: session, cookies)]) { [logger] result in
            if case .failure(let error) = result {
                logger.error("cannot store a session's cookies", metadata: ["session": .string(session), "error": "\(error)"])
            }
            done()
        }
    }
}
