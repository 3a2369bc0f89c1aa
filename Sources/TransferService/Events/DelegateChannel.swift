import Dispatch
import Reactor
import TransferEngine

/// Pushes one session's events to its delegate, in `seq` order, one at a time: the next event goes
/// only once the previous one was received (2xx). Failures are retried on the schedule, keeping
/// the same `webhook-id`; 410 Gone, or a schedule run out, disables the delegate. Deliveries go
/// through the transfer engine, so protocol limits and the network policy apply to them too.
final class DelegateChannel: @unchecked Sendable {
    private let session: SessionState
    /// The delegate it delivers to; a changed delegate gets a new channel.
    let delegate: Delegate
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

    init(session: SessionState, delegate: Delegate, coordinator: TaskCoordinator) {
        self.session = session
        self.delegate = delegate
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

    private func wake() {
        queue.async { [self] in pump() }
    }

    private func pump() {
        guard !stopped, !inFlight, !waitingForRetry else { return }
        if let current { return send(current) }
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
        if let current { send(current) } else if skipped > after { pump() }
    }

    private func send(_ event: Event) {
        inFlight = true
        attempt += 1
        let number = attempt
        coordinator.deliver(event, to: delegate, session: session) { [self] outcome in
            queue.async { [self] in finished(event, attempt: number, outcome: outcome) }
        }
    }

    private func finished(_ event: Event, attempt number: Int, outcome: TransferOutcome) {
        inFlight = false
        // Stopped because transferd is stopping: no answer either way; the next start sends it.
        guard outcome.stopReason != .shutdown else { return }
        let schedule = coordinator.limits.webhookSchedule
        var nextDelay: Double?
        var disable: String?
        let status = outcome.failure == nil ? outcome.response?.status : nil
        if let status, (200..<300).contains(status) {
            current = nil
            attempt = 0
            coordinator.markDelivered(session, through: event.seq)
        } else if status == 410 {
            disable = "the delegate answered 410 Gone"
        } else if number < schedule.count {
            // Jitter (±10 %) keeps many sessions failing at once from retrying in step; a later
            // `Retry-After` (RFC 9110 §10.2.3) wins, up to a day.
            nextDelay = schedule[number] * Double.random(in: 0.9...1.1)
            if let retryAfter = outcome.response.flatMap(RetryAfter.seconds) {
                nextDelay = max(nextDelay!, min(retryAfter, RetryAfter.longest))
            }
        } else {
            disable = "delivery failed \(number) times"
        }
        coordinator.recordAttempt(DeliveryAttempt(event, attempt: number, outcome: outcome,
                                                  nextAttemptAt: nextDelay.map { Timestamp.now().adding(seconds: $0) }), of: session)
        if let disable {
            current = nil
            attempt = 0
            coordinator.disable(delegate, of: session, because: disable)
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
        guard !stopped, delegate.wants(.taskProgress) else { return }
        coordinator.deliver(event, to: delegate, session: session) { _ in }
    }
}

/// `Retry-After` (RFC 9110 §10.2.3): seconds, or an HTTP-date.
enum RetryAfter {
    /// The longest wait a receiver's `Retry-After` can ask for.
    static let longest: Double = 86_400

    static func seconds(_ response: ResponseHead) -> Double? {
        guard let value = response.header("retry-after") else { return nil }
        if let n = Double(value.trimmingCharacters()), n >= 0 { return n }
        return HTTPDate.parse(value).map { max(0, $0.seconds - Timestamp.now().seconds) }
    }
}

extension DeliveryAttempt {
    /// What an attempt to deliver `event` came to: any 2xx is success; a 3xx (never followed),
    /// other statuses and transport failures are errors.
    init(_ event: Event, attempt: Int, outcome: TransferOutcome, nextAttemptAt: Timestamp?) {
        let status = outcome.failure == nil ? outcome.response?.status : nil
        self.init(session: event.session, event: event.id, seq: event.seq, attempt: attempt, at: Timestamp.now(), status: status,
                  error: outcome.failure?.message ?? status.flatMap { (200..<300).contains($0) ? nil : "HTTP \($0)" },
                  nextAttemptAt: nextAttemptAt)
    }
}
