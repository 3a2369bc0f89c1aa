import Reactor
import TransferModel
import TransferStore

/// Cluster mode: durable sessions another replica holds, as this one shows them to readers of
/// their event journal (long-polls and streams). A view is the session's stored row, with a feed
/// this replica publishes the session's newly committed events to when the store says there are
/// some (`LISTEN`/`NOTIFY`) or, failing that, when a periodic look finds them. Views nobody
/// listens to are dropped.
package final class SessionViews: @unchecked Sendable {
    private struct View {
        let session: SessionState
        /// The newest seq published to its feed.
        var published: Int64
    }

    private let views = Locked<[String: View]>([:])

    package init() {}

    /// The view of `identifier`, made from its stored row by `load` when there is none yet.
    func view(_ identifier: String, load: () throws -> SessionState?) rethrows -> SessionState? {
        if let view = views.withLock({ $0[identifier] }) { return view.session }
        guard let session = try load() else { return nil }
        return views.withLock { views in
            if let existing = views[identifier] { return existing.session }
            views[identifier] = View(session: session, published: session.locked { session.nextEventSeq - 1 })
            return session
        }
    }

    /// Publishes what `identifier`'s journal gained since the last look, read by `read(after)`.
    /// Views no one listens to are dropped here, so a long-gone reader costs nothing for long.
    func refresh(_ identifier: String, read: (Int64) throws -> [Event]) {
        guard let view = views.withLock({ $0[identifier] }) else { return }
        guard view.session.feed.hasListeners else {
            views.withLock { if $0[identifier]?.session === view.session { $0[identifier] = nil } }
            return
        }
        guard let events = try? read(view.published), let last = events.last else { return }
        // One refresher at a time per view publishes a given seq: the first to raise the mark wins.
        let fresh = views.withLock { views -> Bool in
            guard let current = views[identifier], current.session === view.session, current.published < last.seq else { return false }
            views[identifier]?.published = last.seq
            return true
        }
        guard fresh else { return }
        view.session.locked { view.session.nextEventSeq = max(view.session.nextEventSeq, last.seq + 1) }
        view.session.feed.publish(events.filter { $0.seq > view.published })
    }

    var identifiers: [String] { views.withLock { Array($0.keys) } }
}
