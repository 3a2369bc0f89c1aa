import TransferModel
import TransferStore

/// Reads of what the journal holds. A read that may reach the store has two forms: one on the
/// caller's thread, for callers off the event loops (start-up, a transfer's start), and one that
/// runs on the store's readers and answers there, for the API: its caller is an HTTP event loop,
/// and with PostgreSQL a read is a round trip that may wait for a lock. What memory holds is
/// answered at once either way.
extension TaskJournal {
    /// Runs `query` on the store's readers; a failure is a refusal, never "nothing": a client told
    /// a task does not exist would create it again, or give up on it.
    func readStore<T>(_ store: any TransferStore, _ query: @escaping @Sendable (any TransferStore) throws -> T,
                      answer: @escaping @Sendable (Result<T, Refusal>) -> Void)
    {
        store.read({ try query(store) }) { answer($0.mapError { Refusal.storeFailure($0) }) }
    }

    /// Journaled events of a session after `seq`, from its store. A store that cannot be read is
    /// no empty journal: a reader told "nothing after seq" would move on past what it missed.
    func events(of session: SessionState, after seq: Int64, limit: Int) throws(Refusal) -> [Event] {
        do {
            return try store(of: session).events(session: session.identifier, after: seq, limit: limit)
        } catch {
            throw Refusal.storeFailure(error)
        }
    }

    /// The task's current record as memory holds it: every task that has not completed is there.
    func snapshot(_ session: SessionState, _ id: String) -> TaskRecord? {
        session.locked { session.tasks[id].flatMap { $0.lifecycle.isDeleted ? nil : $0.snapshot } }
    }

    /// The task's current record: from memory, or for a completed task of a durable session (not
    /// kept in memory), from the store — here, on the caller's thread. Not for an event loop.
    func record(_ session: SessionState, _ id: String) throws(Refusal) -> TaskRecord {
        if let snapshot = snapshot(session, id) { return snapshot }
        let stored: TaskRecord?
        do {
            stored = try store(of: session).loadTask(session: session.identifier, id: id)
        } catch {
            throw Refusal.storeFailure(error)
        }
        guard let stored else { throw Refusal.notFound("task \(id)") }
        return stored
    }

    /// The task's current record, as `record(_:_:)` finds it, with the store read on its readers.
    func record(_ session: SessionState, _ id: String, answer: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void) {
        if let snapshot = snapshot(session, id) { return answer(.success(snapshot)) }
        readStore(store(of: session), { try $0.loadTask(session: session.identifier, id: id) }) {
            answer($0.flatMap { $0.map { .success($0) } ?? .failure(Refusal.notFound("task \(id)")) })
        }
    }
}
