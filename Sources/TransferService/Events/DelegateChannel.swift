import Dispatch
import Reactor
import TransferEngine

/// Pushes one session's events to its delegate, in `seq` order, one at a time: the next event goes
/// only once the previous one was received (2xx). Failures are retried on the schedule, keeping
/// the same `webhook-id`; 410 Gone, or a schedule run out, disables the delegate. Deliveries go
/// through the transfer engine, so protocol limits and the network policy apply to them too.
final class DelegateChannel: @unchecked Sendable {
    private let session: SessionState
    private let coordinator: TaskCoordinator
    /// Everything below is confined to this queue.
    private let queue = DispatchQueue(label: "transferd.delegate")
    private var subscription: UInt64?
    private var current: Event?
    private var attempt = 0
    private var inFlight = false
    /// A failed attempt waits for its retry time: nothing is sent meanwhile.
    private var waitingForRetry = false
    private var stopped = false

    init(session: SessionState, coordinator: TaskCoordinator) {
        self.session = session
        self.coordinator = coordinator
    }

    func start() {
        subscription = session.feed.subscribe { [weak self] events in
            guard let self else { return }
            if events.count == 1, events[0].type == .taskProgress {
                self.queue.async { self.pushProgress(events[0]) }
            } else {
                self.wake()
            }
        }
        wake()
    }

    func stop() {
        queue.async { [self] in
            stopped = true
            if let subscription { session.feed.unsubscribe(subscription) }
        }
    }

    func wake() {
        queue.async { [self] in pump() }
    }

    private var delegate: Delegate? {
        session.locked { session.delegate.flatMap { $0.disabled ? nil : $0 } }
    }

    private func pump() {
        guard !stopped, !inFlight, !waitingForRetry, let delegate else { return }
        if let current { return send(current, to: delegate) }
        let after = session.locked { session.deliveredThrough }
        let upcoming = coordinator.events(of: session, after: after, limit: 64)
        var skipped = after
        for event in upcoming {
            if delegate.wants(event.type) {
                current = event
                break
            }
            skipped = event.seq
        }
        if skipped > after { coordinator.markDelivered(session, through: skipped) }
        if let current { send(current, to: delegate) } else if skipped > after { pump() }
    }

    private func send(_ event: Event, to delegate: Delegate) {
        inFlight = true
        attempt += 1
        let number = attempt
        coordinator.deliver(event, to: delegate, session: session) { [self] outcome in
            queue.async { [self] in finished(event, attempt: number, outcome: outcome) }
        }
    }

    private func finished(_ event: Event, attempt number: Int, outcome: TransferOutcome) {
        inFlight = false
        let status = outcome.failure == nil ? outcome.response?.status : nil
        let schedule = coordinator.limits.webhookSchedule
        var nextDelay: Double?
        var disable: String?
        switch status {
        case let s? where (200..<300).contains(s):
            current = nil
            attempt = 0
            coordinator.markDelivered(session, through: event.seq)
        case 410?:
            disable = "the delegate answered 410 Gone"
        default:
            if number < schedule.count {
                var delay = schedule[number] * Double.random(in: 0.9...1.1)
                if let retryAfter = outcome.response.flatMap(RetryAfter.seconds) { delay = max(delay, retryAfter) }
                nextDelay = delay
            } else {
                disable = "delivery failed \(number) times"
            }
        }
        let error = outcome.failure?.message ?? status.flatMap { (200..<300).contains($0) ? nil : "HTTP \($0)" }
        coordinator.recordAttempt(DeliveryAttempt(
            session: session.identifier, event: event.id, seq: event.seq, attempt: number, at: Timestamp.now(),
            status: outcome.response?.status, error: error, nextAttemptAt: nextDelay.map { Timestamp.now().adding(seconds: $0) }))
        if let disable {
            current = nil
            attempt = 0
            coordinator.disableDelegate(of: session, because: disable)
            return
        }
        guard let nextDelay else { return pump() }
        waitingForRetry = true
        let clock = coordinator.clock
        clock.execute { [self] in
            clock.scheduleTimer(at: MonotonicClock.after(seconds: nextDelay)) { [self] in
                queue.async { [self] in
                    waitingForRetry = false
                    pump()
                }
            }
        }
    }

    /// Progress is live only: one attempt, no retry, no record.
    private func pushProgress(_ event: Event) {
        guard !stopped, let delegate, delegate.wants(.taskProgress) else { return }
        coordinator.deliver(event, to: delegate, session: session) { _ in }
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
