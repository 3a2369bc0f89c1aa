import Glibc
import TransferVocabulary

/// Where a session's cookies are kept between runs (the service's store). Called on the session's
/// loop thread with the whole jar; it must return quickly and call `done` once the cookies are
/// stored.
public protocol CookieStorage: AnyObject, Sendable {
    func save(_ cookies: [Cookie], session: String, done: @escaping @Sendable () -> Void)
}

/// A session's cookie jar on its loop: written out when it changed, listed, reset and flushed.
extension MultiLoop {
    /// Writes the jar if a transfer changed it (expired cookies dropped).
    func saveCookiesIfChanged(_ q: SessionQueue) {
        let cookies = q.jar.live(now: Int64(time(nil)))
        guard q.jar.takeChanged(), let storage = q.cookieStorage else { return }
        storage.save(cookies, session: q.identifier) {}
    }

    /// The session's cookies that have not expired.
    func cookies(of session: String) -> [Cookie] {
        guard let q = sessions[session] else { return [] }
        defer { saveCookiesIfChanged(q) }
        return q.jar.live(now: Int64(time(nil)))
    }

    /// `POST …/reset`: forgets the session's cookies (in memory and in storage), its DNS and TLS
    /// session caches, and its kept-alive connections (the next request to each host opens a new
    /// one, so nothing authenticated before is carried over). `done` runs once storage has it.
    func resetSession(_ session: String, done: @escaping @Sendable () -> Void) {
        let q = queue(for: session)
        q.jar.removeAll()
        _ = q.jar.takeChanged()
        q.flush()
        retireShare(of: session)
        guard let storage = q.cookieStorage else { return done() }
        storage.save([], session: session, done: done)
    }

    /// `POST …/flush`: writes the session's cookies out, and its next request to each host opens
    /// a new connection (URLSession's `flush`) rather than riding on one kept alive from before.
    func flushSession(_ session: String, done: @escaping @Sendable () -> Void) {
        let q = queue(for: session)
        q.flush()
        let cookies = q.jar.live(now: Int64(time(nil)))
        _ = q.jar.takeChanged()
        guard let storage = q.cookieStorage else { return done() }
        storage.save(cookies, session: session, done: done)
    }
}
