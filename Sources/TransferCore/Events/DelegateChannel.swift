import Dispatch
import Reactor
import TransferEngine
import TransferModel

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
    private var upcoming: UpcomingEvents
    private var current: Event?
    private var attempt = 0
    private var inFlight = false
    /// A failed attempt waits for its retry time: nothing is sent meanwhile.
    private var waitingForRetry = false
    private var stopped = false
    /// Attempts, and delivery progress, not stored yet: saved together `saveDelay` after the first
    /// of them. Losing them in a crash only sends those events again (with the same webhook-id);
    /// storing each at once would put a commit — an fsync — per webhook in front of every task
    /// completion's.
    private var unsaved: [DeliveryAttempt] = []
    private var saveScheduled = false
    static let saveDelay = 0.1

    /// Delivers what follows `delivered` (the session's `deliveredThrough`).
    package init(session: SessionState, delegate: Delegate, delivered: Int64, coordinator: TaskCoordinator) {
        self.session = session
        self.delegate = delegate
        self.coordinator = coordinator
        upcoming = UpcomingEvents(after: delivered)
    }

    /// Events read from the journal at once, when the channel has fallen behind.
    static let pageSize = 64

    func start() {
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

    /// Stores what is not stored yet, now (at shutdown, while the store is open).
    func saveNow() {
        queue.sync { if saveScheduled { save() } }
    }

    private func save() {
        saveScheduled = false
        let attempts = unsaved
        unsaved = []
        coordinator.saveDeliveries(session, attempts)
    }

    private func noteProgress(_ attempt: DeliveryAttempt? = nil) {
        if let attempt { unsaved.append(attempt) }
        guard !saveScheduled else { return }
        saveScheduled = true
        let clock = coordinator.clock
        clock.execute { [self] in
            clock.scheduleTimer(at: MonotonicClock.after(seconds: Self.saveDelay)) { [self] in
                queue.async { [self] in if saveScheduled { save() } }
            }
        }
    }

    private func pump() {
        guard !stopped, !inFlight, !waitingForRetry else { return }
        if current == nil { current = nextWanted() }
        if let current { send(current) }
    }

    /// The next event the delegate wants; those it does not want count as delivered.
    private func nextWanted() -> Event? {
        var skipped: Int64?
        defer {
            if let skipped {
                coordinator.markDelivered(session, through: skipped)
                noteProgress()
            }
        }
        while true {
            if upcoming.needsRead {
                upcoming.read(coordinator.events(of: session, after: upcoming.known, limit: Self.pageSize), pageSize: Self.pageSize)
            }
            guard let event = upcoming.take() else { return nil }
            if delegate.wants(event.type) { return event }
            skipped = event.seq
        }
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
        noteProgress(DeliveryAttempt(event, attempt: number, outcome: outcome,
                                     nextAttemptAt: nextDelay.map { Timestamp.now().adding(seconds: $0) }))
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
    package init(_ event: Event, attempt: Int, outcome: TransferOutcome, nextAttemptAt: Timestamp?) {
        let status = outcome.failure == nil ? outcome.response?.status : nil
        self.init(session: event.session, event: event.id, seq: event.seq, attempt: attempt, at: Timestamp.now(), status: status,
                  error: outcome.failure?.message ?? status.flatMap { (200..<300).contains($0) ? nil : "HTTP \($0)" },
                  nextAttemptAt: nextAttemptAt)
    }
}
