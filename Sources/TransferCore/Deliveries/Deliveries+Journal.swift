import TransferModel

/// Webhook attempts as the API lists them, and one more on request; both read the store on its
/// readers, since the API asks from an HTTP event loop.
extension Deliveries {
    /// `GET …/deliveries`: webhook attempts in the order they were made.
    func page(_ session: SessionState, after row: Int64, limit: Int,
              answer: @escaping @Sendable (Result<TaskCoordinator.DeliveryPage, Refusal>) -> Void)
    {
        journal.readStore(journal.store(of: session), { try $0.attempts(session: session.identifier, after: row, limit: limit + 1) }) {
            answer($0.map { stored in
                var rows = stored.map { ($0.position, $0.attempt) }
                let more = rows.count > limit
                if more { rows.removeLast() }
                return TaskCoordinator.DeliveryPage(rows: rows, next: more ? rows.last?.0 : nil)
            })
        }
    }

    /// `POST …/events/{event}/redeliver`: one more attempt of that event (numbered 0 in the
    /// deliveries), besides the in-order delivery, which it neither waits for nor moves. `queued`
    /// runs once it is, after the event was read on the store's readers.
    func redeliver(_ session: SessionState, eventID: String, queued: @escaping @Sendable (Result<Void, Refusal>) -> Void) throws(Refusal) {
        guard let delegate = session.locked({ session.delegate }) else {
            throw Refusal(.conflict, "no_delegate", "session \(session.identifier) has no delegate")
        }
        guard !delegate.disabled else {
            throw Refusal(.conflict, "no_delegate", "the delegate of session \(session.identifier) is disabled (it answered 410 Gone); set it again with PUT")
        }
        journal.readStore(journal.store(of: session), { try $0.event(session: session.identifier, id: eventID) }) { [self] found in
            guard case .success(let event?) = found else {
                return queued(found.flatMap { _ in .failure(Refusal.notFound("event \(eventID)")) })
            }
            deliver(event, to: delegate, session: session) { [self] outcome in
                guard outcome.stopReason != .shutdown else { return }
                saveDeliveries(session, [DeliveryAttempt(event, attempt: 0, outcome: outcome, nextAttemptAt: nil)])
            }
            queued(.success(()))
        }
    }
}
