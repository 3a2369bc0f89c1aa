import Dispatch
import Lifecycles
import Reactor
import TransferEngine
import Logging
import TransferModel

/// Pushes one session's events to its delegate as a `DeliveryLifecycle` says: the channel offers
/// the value the events it asks for, in `seq` order, sends what it says, and reports each attempt's
/// outcome and each retry timer back to it. With one event in flight (the delegate's default
/// `max_in_flight`) the next goes only once the previous one was received (2xx); with more, up to
/// that many are out at once, each retried on its own. Failures are retried on the schedule,
/// keeping the same `webhook-id`; 410 Gone, or a schedule run out, disables the delegate.
/// Deliveries go through the transfer engine, so protocol limits and the network policy apply to
/// them too.
final class DelegateChannel: @unchecked Sendable {
    private let session: SessionState
    private let deliveries: Deliveries
    /// Everything below is confined to the session's executor.
    private var queue: DispatchQueue { session.executor }
    /// The delegate it delivers to; `use` replaces it.
    private var delegate: Delegate
    private var delivery: DeliveryLifecycle
    /// Counts replacements of the delegate: answers to attempts sent to an earlier one, and their
    /// retry timers, are no news for the delivery to the current one.
    private var generation = 0
    /// The events the lifecycle has out (sent, or waiting to be sent again), by seq: one received
    /// leaves even while an earlier one holds up `deliveredThrough`.
    private var outstanding: [Int64: Event] = [:]
    private var subscription: UInt64?
    private var upcoming: UpcomingEvents
    private var stopped = false
    /// Attempts, and delivery progress, not stored yet: saved together `saveDelay` after the first
    /// of them. Losing them in a crash only sends those events again (with the same webhook-id);
    /// storing each at once would put a commit — an fsync — per webhook in front of every task
    /// completion's.
    private var unsaved: [DeliveryAttempt] = []
    private var saveScheduled = false
    static let saveDelay = 0.1

    /// Delivers what follows `delivered` (the session's `deliveredThrough`), retrying on the
    /// configured schedule (which tests shorten).
    init(session: SessionState, delegate: Delegate, delivered: Int64, deliveries: Deliveries) {
        self.session = session
        self.delegate = delegate
        self.deliveries = deliveries
        delivery = DeliveryLifecycle(deliveredThrough: delivered, maxInFlight: delegate.maxInFlight,
                                     schedule: deliveries.schedule)
        upcoming = UpcomingEvents(after: delivered)
    }

    /// Events read from the journal at once, when the channel has fallen behind.
    static let pageSize = 64

    func start() {
        deliveries.configureDeliveries(of: session, for: delegate)
        subscription = session.feed.subscribe { [weak self] events in
            guard let self else { return }
            if events.count == 1, events[0].type == .taskProgress {
                self.queue.async { self.pushProgress(events[0]) }
            } else {
                self.queue.async {
                    self.upcoming.committed(events)
                    self.pump()
                }
            }
        }
        queue.async { [self] in pump() }
    }

    func stop() {
        queue.async { [self] in
            stopped = true
            if let subscription { session.feed.unsubscribe(subscription) }
            if saveScheduled { save() }
        }
    }

    /// Delivers to `wanted` from now on. Another delegate (URL, secret, filter or `max_in_flight`)
    /// starts over after what was delivered, at once rather than after the old one's retry delay.
    func use(_ wanted: Delegate) {
        queue.async { [self] in
            guard wanted != delegate else { return }
            delegate = wanted
            generation += 1
            perform(feed(.delegateReplaced))
            if delivery.maxInFlight != wanted.maxInFlight {
                deliveries.configureDeliveries(of: session, for: wanted)
                // The room for events is fixed in the value; after the replacement nothing is out,
                // so a new one from the same point is the same delivery with another room.
                delivery = DeliveryLifecycle(deliveredThrough: delivery.deliveredThrough, maxInFlight: wanted.maxInFlight,
                                             schedule: delivery.schedule)
            }
            outstanding = [:]
            upcoming = UpcomingEvents(after: delivery.deliveredThrough)
            pump()
        }
    }

    /// Stores what is not stored yet, now (at shutdown, while the store is open).
    func saveNow() {
        queue.sync { if saveScheduled { save() } }
    }

    private func save() {
        dispatchPrecondition(condition: .onQueue(queue))
        saveScheduled = false
        let attempts = unsaved
        unsaved = []
        deliveries.saveDeliveries(session, attempts)
    }

    private func noteProgress(_ attempt: DeliveryAttempt? = nil) {
        dispatchPrecondition(condition: .onQueue(queue))
        if let attempt { unsaved.append(attempt) }
        guard !saveScheduled else { return }
        saveScheduled = true
        deliveries.clock.schedule(after: Self.saveDelay, on: queue) { [self] in if saveScheduled { save() } }
    }

    /// Offers the lifecycle events while it wants them; those the delegate does not want are
    /// skipped, which counts them as delivered.
    private func pump() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped else { return }
        while delivery.wantsEvent, let event = nextEvent() {
            guard delegate.wants(event.type) else {
                perform(feed(.eventSkipped(seq: event.seq)))
                continue
            }
            outstanding[event.seq] = event
            perform(feed(.eventAvailable(seq: event.seq)))
        }
    }

    private func nextEvent() -> Event? {
        if upcoming.needsRead {
            // Unreadable now: read as nothing yet, so delivery waits and reads again at the next event.
            upcoming.read((try? deliveries.journal.events(of: session, after: upcoming.known, limit: Self.pageSize)) ?? [], pageSize: Self.pageSize)
        }
        return upcoming.take()
    }

    /// Tells the lifecycle what happened. An event it cannot take where it is would be a slip of
    /// the channel's: logged, and nothing is done.
    private func feed(_ event: DeliveryLifecycle.Event) -> [DeliveryLifecycle.Action] {
        switch delivery.handle(event) {
        case .perform(let actions):
            return actions
        case .invalid(_, let event):
            deliveries.logger.error("webhook delivery cannot take this here",
                                     metadata: ["session": .string(session.identifier), "event": .string("\(event)")])
            return []
        }
    }

    private func perform(_ actions: [DeliveryLifecycle.Action]) {
        dispatchPrecondition(condition: .onQueue(queue))
        for action in actions {
            switch action {
            case .send(let seq, let attempt):
                if let event = outstanding[seq] { send(event, attempt: attempt) }
            case .scheduleRetry(let seq, let delay):
                scheduleRetry(seq, after: delay)
            case .markDelivered(let through):
                deliveries.markDelivered(session, through: through)
                noteProgress()
            case .disable(let reason):
                outstanding = [:]
                deliveries.disable(delegate, of: session, because: reason.explanation)
            }
        }
    }

    private func send(_ event: Event, attempt: Int) {
        let generation = generation
        deliveries.deliver(event, to: delegate, session: session) { [self] outcome in
            queue.async { [self] in finished(event, attempt: attempt, generation: generation, outcome: outcome) }
        }
    }

    private func finished(_ event: Event, attempt: Int, generation sent: Int, outcome: TransferOutcome) {
        dispatchPrecondition(condition: .onQueue(queue))
        // Stopped because transferd is stopping: no answer either way; the next start sends it.
        guard outcome.stopReason != .shutdown else { return }
        deliveries.metrics.webhookAttempt(event, status: outcome.failure == nil ? outcome.response?.status : nil)
        guard sent == generation else {
            // Made to a replaced delegate: it is on record, but decides nothing for the current one.
            return noteProgress(DeliveryAttempt(event, attempt: attempt, outcome: outcome, nextAttemptAt: nil))
        }
        let status = outcome.failure == nil ? outcome.response?.status : nil
        let actions: [DeliveryLifecycle.Action]
        if let status, (200..<300).contains(status) {
            outstanding[event.seq] = nil
            actions = feed(.attemptSucceeded(seq: event.seq))
        } else if status == 410 {
            actions = feed(.gone(seq: event.seq))
        } else {
            // Jitter (±10 %) keeps many sessions failing at once from retrying in step; a later
            // `Retry-After` (RFC 9110 §10.2.3) wins, up to a day.
            actions = feed(.attemptFailed(seq: event.seq, retryAfter: outcome.response.flatMap(RetryAfter.seconds),
                                          jitter: Double.random(in: 0.9...1.1)))
        }
        var retryDelay: Double?
        for case .scheduleRetry(_, let delay) in actions { retryDelay = delay }
        if status.map({ !(200..<300).contains($0) }) ?? true {
            var metadata: Logger.Metadata = ["session": .string(session.identifier), "event": .string(event.id),
                                             "seq": .stringConvertible(event.seq), "attempt": .stringConvertible(attempt),
                                             "error": .string(outcome.failure?.message ?? status.map { "HTTP \($0)" } ?? "no response")]
            if let status { metadata["status"] = .stringConvertible(status) }
            if let task = event.task { metadata["task"] = .string(task) }
            if let retryDelay { metadata["retry_in_s"] = .stringConvertible((retryDelay * 10).rounded() / 10) }
            deliveries.logger.warning("webhook delivery failed", metadata: metadata)
        }
        noteProgress(DeliveryAttempt(event, attempt: attempt, outcome: outcome,
                                     nextAttemptAt: retryDelay.map { deliveries.clock.now().adding(seconds: $0) }))
        perform(actions)
        pump()
    }

    private func scheduleRetry(_ seq: Int64, after delay: Double) {
        dispatchPrecondition(condition: .onQueue(queue))
        let generation = generation
        deliveries.clock.schedule(after: delay, on: queue) { [self] in
            guard !stopped, generation == self.generation else { return }
            perform(feed(.timerFired(seq: seq)))
        }
    }

    /// Progress is live only: one attempt, no retry, no record.
    private func pushProgress(_ event: Event) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped, delegate.wants(.taskProgress) else { return }
        deliveries.deliver(event, to: delegate, session: session) { _ in }
    }
}

extension DeliveryLifecycle.DisableReason {
    /// Why the delegate was disabled, for the log.
    var explanation: String {
        switch self {
        case .gone: "the delegate answered 410 Gone"
        case .exhausted(let attempts): "delivery failed \(attempts) times"
        }
    }
}

/// `Retry-After` (RFC 9110 §10.2.3): seconds, or an HTTP-date.
enum RetryAfter {
    static func seconds(_ response: ResponseHead) -> Double? {
        guard let value = response.header("retry-after") else { return nil }
        if let n = Double(value.trimmingCharacters()), n >= 0 { return n }
        return HTTPDate.parse(value).map { max(0, $0.seconds - Timestamp.now().seconds) }
    }
}

extension DeliveryAttempt {
    /// What an attempt to deliver `event` came to: any 2xx is success; a 3xx (never followed),
    /// other statuses and transport failures are errors.
    package init(_ event: Event, attempt: Int, outcome: TransferOutcome, nextAttemptAt: Timestamp?) {
        let status = outcome.failure == nil ? outcome.response?.status : nil
        self.init(session: event.session, event: event.id, seq: event.seq, attempt: attempt, at: Timestamp.now(), status: status,
                  error: outcome.failure?.message ?? status.flatMap { (200..<300).contains($0) ? nil : "HTTP \($0)" },
                  nextAttemptAt: nextAttemptAt)
    }
}
