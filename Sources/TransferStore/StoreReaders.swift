import Dispatch
import Reactor

/// Where a store's reads run for callers that must not wait for them (an HTTP event loop): at
/// most `width` at once, started in the order they came. The bound keeps a database that stalls (a
/// lock held, a server gone) from taking a thread — and, for PostgreSQL, a connection — per waiting
/// request; reads beyond it queue here, costing nothing but memory. The reads run on a Dispatch
/// queue of their own, which is given a thread for each while one blocks: on Dispatch's shared
/// pool, reads stuck in the database would hold the few threads other work waits for.
package final class StoreReaders: Sendable {
    private let width: Int
    private let queue = DispatchQueue(label: "transferd.store-reads", attributes: .concurrent)
    private let state = Locked<(queued: [@Sendable () -> Void], running: Int)>(([], 0))

    package init(width: Int) {
        precondition(width > 0)
        self.width = width
    }

    package func submit(_ read: @escaping @Sendable () -> Void) {
        let start = state.withLock { s -> Bool in
            s.queued.append(read)
            guard s.running < width else { return false }
            s.running += 1
            return true
        }
        if start { queue.async { [self] in drain() } }
    }

    /// Runs queued reads one after another until none is left, then gives its slot back.
    private func drain() {
        while let read = state.withLock({ s -> (@Sendable () -> Void)? in
            guard !s.queued.isEmpty else {
                s.running -= 1
                return nil
            }
            return s.queued.removeFirst()
        }) {
            read()
        }
    }
}

extension TransferStore {
    /// Runs `query` (one or more of this store's reads) off the caller's thread, and hands its
    /// result to `answer` on the thread that ran it.
    package func read<T>(_ query: @escaping @Sendable () throws -> T, answer: @escaping @Sendable (Result<T, any Error>) -> Void) {
        submitRead { answer(Result { try query() }) }
    }
}
