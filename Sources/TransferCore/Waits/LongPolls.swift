import Dispatch
import Reactor
import Synchronization
import TransferModel

/// Long-polls (`GET …/tasks/{task}?wait=`, `GET …/events?wait=`): answered when what they wait
/// for happens or their deadline passes, whichever comes first, and all at once at shutdown.
struct LongPolls: Sendable {
    let journal: TaskJournal
    let clock: any ServiceClock
    /// Where the journal is read (a store read never runs on an event loop).
    let reads: DispatchQueue
    /// Long-polls in progress, answered early at shutdown (`end`).
    let openWaits = OpenWaits()

    /// Answers every long-poll now with what there is (and any new one at once): the first step
    /// of a shutdown, so their clients get an answer before connections close.
    func end() { openWaits.end() }

    /// `GET …/tasks/{task}?wait=S`: the task now if completed or `seconds` is 0, otherwise when it
    /// completes or the wait runs out, whichever comes first.
    func waitForTask(_ session: SessionState, _ id: String, seconds: Double,
                     completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void)
    {
        // The entry first: a task that completes meanwhile leaves memory, and the store then has
        // its completion, so the record read after a miss is never older than the entry was.
        guard seconds > 0, let entry = journal.liveEntry(session, id) else {
            return journal.record(session, id, answer: completion)
        }
        let answered = Atomic<Bool>(false)
        let wait = Locked<UInt64?>(nil)
        let openWaits = openWaits
        let answer: @Sendable (TaskRecord) -> Void = { record in
            guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
            if let id = wait.withLock({ $0 }) { openWaits.remove(id) }
            completion(.success(record))
        }
        let alreadyDone: TaskRecord? = session.locked {
            if entry.record.isCompleted { return entry.record }
            entry.completionWaiters.append(answer)
            return nil
        }
        if let alreadyDone { return answer(alreadyDone) }
        let answerNow: @Sendable () -> Void = { answer(session.locked { entry.snapshot }) }
        guard let id = openWaits.add(answerNow) else { return answerNow() }
        wait.withLock { $0 = id }
        // Answered meanwhile (before the id was stored)? Then it is no longer open.
        if answered.load(ordering: .acquiring) { openWaits.remove(id) }
        clock.schedule(after: seconds) { answer(session.locked { entry.snapshot }) }
    }

    /// Events after `seq` now, or — when there are none and `seconds` > 0 — as soon as one is
    /// committed, or an empty list when the wait runs out; a refusal when the store cannot be read.
    func waitForEvents(_ session: SessionState, after seq: Int64, limit: Int, seconds: Double,
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
                reads.async { [journal] in answer(Result { () throws(Refusal) in try journal.events(of: session, after: seq, limit: limit) }) }
            }
            subscription.withLock { $0 = id }
            // Answered already (by a listener that ran before the id was stored)? Then stop listening.
            if answered.load(ordering: .acquiring) { session.feed.unsubscribe(id) }
        }
        reads.async { [self] in
            let current = Result { () throws(Refusal) in try journal.events(of: session, after: seq, limit: limit) }
            guard case .success(let now) = current, now.isEmpty, seconds > 0 else { return answer(current) }
            // At shutdown: nothing new yet, as when the wait runs out.
            guard let id = openWaits.add({ answer(.success([])) }) else { return answer(.success([])) }
            wait.withLock { $0 = id }
            if answered.load(ordering: .acquiring) { openWaits.remove(id) }
            clock.schedule(after: seconds) { answer(.success([])) }
        }
    }
}
