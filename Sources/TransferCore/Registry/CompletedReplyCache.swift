import Reactor

/// The API encoding of the completed tasks read lately. A durable session's completed task is not
/// in memory, and reading it from SQLite, decoding and encoding it again cost a task GET about
/// 20 µs more (31,000 GETs a second against 65,000 from memory), while clients that poll a finished
/// task read the same few over and over. So up to `capacity` encodings are kept (1,024: 1.5 MB
/// at the usual 1.5 KB), one of them dropped for each new one once full; none is added when a
/// task completes, so history never fills it.
final class CompletedReplyCache: Sendable {
    private struct Key: Hashable {
        let session: String
        let id: String
    }

    private struct State {
        var replies: [Key: [UInt8]] = [:]
        /// Bumped by every invalidation: a reply read from the store before one is not kept after it.
        var generation: UInt64 = 0
    }

    private let state = Locked(State())
    private let capacity: Int

    init(capacity: Int = 1024) {
        self.capacity = capacity
    }

    var count: Int { state.withLock { $0.replies.count } }

    /// The cached encoding, or the generation to hand `insert` with one read from the store.
    func lookup(session: String, id: String) -> (reply: [UInt8]?, generation: UInt64) {
        state.withLock { ($0.replies[Key(session: session, id: id)], $0.generation) }
    }

    /// Keeps `reply` unless something was invalidated since `generation` was taken.
    func insert(_ reply: [UInt8], session: String, id: String, generation: UInt64) {
        state.withLock { s in
            guard s.generation == generation else { return }
            if s.replies.count >= capacity, let any = s.replies.first?.key { s.replies[any] = nil }
            s.replies[Key(session: session, id: id)] = reply
        }
    }

    /// Forgets every task, and any insert prepared before.
    func clear() {
        state.withLock { s in
            s.generation += 1
            s.replies = [:]
        }
    }

    /// Forgets a task (changed or deleted), or every task of a session when `id` is nil.
    func invalidate(session: String, id: String? = nil) {
        state.withLock { s in
            s.generation += 1
            if let id {
                s.replies[Key(session: session, id: id)] = nil
            } else {
                s.replies = s.replies.filter { $0.key.session != session }
            }
        }
    }
}
