import Reactor

/// Every session in memory, by identifier. Completed tasks of durable sessions are dropped from
/// memory, oldest first, beyond `completedInMemory`: they stay in SQLite and are read back on demand.
package final class SessionRegistry: @unchecked Sendable {
    private let sessions = Locked<[String: SessionState]>([:])
    private let completedOrder = Locked<(queue: [(SessionState, String)], head: Int)>(([], 0))
    private let completedInMemory: Int

    package init(completedInMemory: Int = 10_000) {
        self.completedInMemory = completedInMemory
    }

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

    /// Notes that a durable session's task completed, evicting the oldest completed tasks from memory.
    /// An ephemeral session's tasks stay: a data task's body is kept only in its entry.
    func noteCompleted(_ session: SessionState, taskID: String) {
        guard session.mode.isDurable else { return }
        let evict: [(SessionState, String)] = completedOrder.withLock { order in
            order.queue.append((session, taskID))
            var out: [(SessionState, String)] = []
            while order.queue.count - order.head > completedInMemory {
                out.append(order.queue[order.head])
                order.head += 1
            }
            if order.head > 4096 && order.head * 2 > order.queue.count {
                order.queue.removeFirst(order.head)
                order.head = 0
            }
            return out
        }
        for (s, id) in evict {
            s.locked {
                if let entry = s.tasks[id], entry.record.isCompleted, entry.completionWaiters.isEmpty {
                    s.dropTask(id)
                }
            }
        }
    }
}
