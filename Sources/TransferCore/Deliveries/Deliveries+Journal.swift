import TransferModel

/// Webhook attempts as the API lists them, and one more on request.
extension Deliveries {
    /// `GET …/deliveries`: webhook attempts in the order they were made.
    func page(_ session: SessionState, after row: Int64, limit: Int) throws(Refusal) -> TaskCoordinator.DeliveryPage {
        var rows: [(Int64, DeliveryAttempt)]
        do {
            rows = try journal.store(of: session).attempts(session: session.identifier, after: row, limit: limit + 1).map { ($0.position, $0.attempt) }
        } catch {
            throw Refusal.storeFailure(error)
        }
        let more = rows.count > limit
        if more { rows.removeLast() }
        return TaskCoordinator.DeliveryPage(rows: rows, next: more ? rows.last?.0 : nil)
    }

    /// `POST …/events/{event}/redeliver`: one more attempt of that event (numbered 0 in the
    /// deliveries), besides the in-order delivery, which it neither waits for nor moves.
    func redeliver(_ session: SessionState, eventID: String) throws(Refusal) {
        guard let delegate = session.locked({ session.delegate }) else {
            throw Refusal(.conflict, "no_delegate", "session \(session.identifier) has no delegate")
        }
        guard !delegate.disabled else {
            throw Refusal(.conflict, "no_delegate", "the delegate of session \(session.identifier) is disabled (it answered 410 Gone); set it again with PUT")
        }
        let found: Event?
        do {
            found = try journal.store(of: session).event(session: session.identifier, id: eventID)
        } catch {
            throw Refusal.storeFailure(error)
        }
        guard let event = found else { throw Refusal.notFound("event \(eventID)") }
        deliver(event, to: delegate, session: session) { [self] outcome in
            guard outcome.stopReason != .shutdown else { return }
            saveDeliveries(session, [DeliveryAttempt(event, attempt: 0, outcome: outcome, nextAttemptAt: nil)])
        }
    }
}
