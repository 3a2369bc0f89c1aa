import Reactor
import TransferModel

/// Who is listening to a session's events right now: event streams, long-polls, the webhook
/// delivery. Told of each batch of events after it is committed, on the committing thread.
package final class EventFeed: Sendable {
    package typealias Listener = @Sendable ([Event]) -> Void

    private let listeners = Locked<[UInt64: Listener]>([:])
    private let nextID = Locked<UInt64>(1)
    private let order = Lock()

    /// Runs `body` alone among callers of `serially`: a session numbers its events and queues them
    /// to its store inside it, so they reach the store, and then listeners, in seq order whatever
    /// thread produced them.
    func serially<T>(_ body: () -> T) -> T {
        order.withLock { body() }
    }

    /// Adds a listener; keep the returned token to remove it.
    package func subscribe(_ listener: @escaping Listener) -> UInt64 {
        let id = nextID.withLock { n -> UInt64 in
            defer { n += 1 }
            return n
        }
        listeners.withLock { $0[id] = listener }
        return id
    }

    package func unsubscribe(_ id: UInt64) {
        _ = listeners.withLock { $0.removeValue(forKey: id) }
    }

    var hasListeners: Bool { listeners.withLock { !$0.isEmpty } }

    func publish(_ events: [Event]) {
        guard !events.isEmpty else { return }
        for listener in listeners.withLock({ Array($0.values) }) { listener(events) }
    }
}
