import Reactor
import Synchronization
import TransferModel

/// Reading the journal: long-polls, webhook attempts, redelivery.
extension TaskCoordinator {
    /// Events after `seq` now, or — when there are none and `seconds` > 0 — as soon as one is
    /// committed, or an empty list when the wait runs out; a refusal when the store cannot be read.
    package func waitForEvents(_ session: SessionState, after seq: Int64, limit: Int, seconds: Double,
                       completion: @escaping @Sendable (Result<[Event], Refusal>) -> Void)
    {
        let answered = Atomic<Bool>(false)
        let subscription = Locked<UInt64?>(nil)
        let wait = Locked<UInt64?>(nil)
        let openWaits = openWaits
        let answer: @Sendable (Result<[Event], Refusal>) -> Void = { [session] events in
            guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
            if let id = subscription.withLock({ $0 }) { session.feed.unsubscribe(id) }
            if let id = wait.withLock({ $0 }) { openWaits.remove(id) }
            completion(events)
        }
        if seconds > 0 {
            // Listen before reading, so an event committed in between is not missed.
            let id = session.feed.subscribe { [self] events in
                guard events.contains(where: { $0.type.isJournaled && $0.seq > seq }) else { return }
                fileWork.async { [self] in answer(Result { () throws(Refusal) in try self.events(of: session, after: seq, limit: limit) }) }
            }
            subscription.withLock { $0 = id }
            // Answered already (by a listener that ran before the id was stored)? Then stop listening.
            if answered.load(ordering: .acquiring) { session.feed.unsubscribe(id) }
        }
        fileWork.async { [self] in
            let current = Result { () throws(Refusal) in try events(of: session, after: seq, limit: limit) }
            guard case .success(let now) = current, now.isEmpty, seconds > 0 else { return answer(current) }
            // At shutdown: nothing new yet, as when the wait runs out.
            guard let id = openWaits.add({ answer(.success([])) }) else { return answer(.success([])) }
            wait.withLock { $0 = id }
            if answered.load(ordering: .acquiring) { openWaits.remove(id) }
            clock.execute { [self] in
                clock.scheduleTimer(at: MonotonicClock.after(seconds: seconds)) { answer(.success([])) }
            }
        }
    }

    package struct DeliveryPage: Sendable {
        package let rows: [(Int64, DeliveryAttempt)]
        package let next: Int64?
    }

    /// `GET …/deliveries`: webhook attempts in the order they were made, read on the store's readers.
    package func deliveries(_ session: SessionState, after row: Int64, limit: Int, answer: @escaping @Sendable (Result<DeliveryPage, Refusal>) -> Void) {
        readStore(store(of: session), { try $0.attempts(session: session.identifier, after: row, limit: limit + 1) }) {
            answer($0.map { stored in
                var rows = stored.map { ($0.position, $0.attempt) }
                let more = rows.count > limit
                if more { rows.removeLast() }
                return DeliveryPage(rows: rows, next: more ? rows.last?.0 : nil)
            })
        }
    }

    /// `POST …/events/{event}/redeliver`: one more attempt of that event (numbered 0 in the
    /// deliveries), besides the in-order delivery, which it neither waits for nor moves. `queued`
    /// runs once it is, after the event was read on the store's readers.
    package func redeliver(_ session: SessionState, eventID: String, queued: @escaping @Sendable (Result<Void, Refusal>) -> Void) throws(Refusal) {
        guard let delegate = session.locked({ session.delegate }) else {
            throw Refusal(.conflict, "no_delegate", "session \(session.identifier) has no delegate")
        }
        guard !delegate.disabled else {
            throw Refusal(.conflict, "no_delegate", "the delegate of session \(session.identifier) is disabled (it answered 410 Gone); set it again with PUT")
        }
        readStore(store(of: session), { try $0.event(session: session.identifier, id: eventID) }) { [self] found in
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
