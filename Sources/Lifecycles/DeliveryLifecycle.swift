/// A session's webhook delivery as a value: which events are in flight to the delegate, which wait
/// out a backoff, how far delivery has got in `seq` order, and whether the delegate is disabled.
/// The caller offers events in `seq` order while `wantsEvent`, sends what `send` says, and reports
/// each attempt's outcome and each timer; it supplies the jitter, so the value has neither a clock
/// nor randomness and every transition can be tested on its own.
///
/// Up to `maxInFlight` events are out at once (sent, or waiting to be sent again), each with its
/// own attempts and backoff. `deliveredThrough` only ever advances over an unbroken run of
/// delivered events: it stops before the earliest event still out. Events delivered past that one
/// leave no trace in the value — every event offered is either out or delivered — so one backing
/// off for hours while thousands behind it are delivered keeps the value at `maxInFlight` slots.
public struct DeliveryLifecycle: Lifecycle {
    /// Delays before each attempt: the first at once, then growing to a day. An event is tried as
    /// many times as the schedule has entries.
    public static let standardSchedule: [Double] = [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
    /// The longest wait a receiver's `Retry-After` can ask for.
    public static let longestRetryAfter: Double = 86_400

    public enum Event: Sendable, Equatable {
        /// The next event the delegate wants, after every event offered before.
        case eventAvailable(seq: Int64)
        /// The next event, of a type the delegate does not want: it counts as delivered.
        case eventSkipped(seq: Int64)
        /// The delegate answered 2xx.
        case attemptSucceeded(seq: Int64)
        /// Anything else but 410 (a 3xx, another status, no answer). `retryAfter`: the seconds the
        /// answer's `Retry-After` asked for; `jitter`: a factor around 1 that spreads retries.
        case attemptFailed(seq: Int64, retryAfter: Double?, jitter: Double)
        /// The delegate answered 410 Gone.
        case gone(seq: Int64)
        /// A retry's wait is over.
        case timerFired(seq: Int64)
        /// The session's delegate was set again: delivery starts over after what was delivered.
        case delegateReplaced
    }

    public enum DisableReason: Sendable, Equatable {
        case gone
        /// Every attempt of the schedule failed.
        case exhausted(attempts: Int)
    }

    public enum Action: Sendable, Equatable {
        /// POST the event; `attempt` counts from 1 (the webhook-id stays the same).
        case send(seq: Int64, attempt: Int)
        /// Report `timerFired` for the event after this many seconds.
        case scheduleRetry(seq: Int64, after: Double)
        /// Every event up to `through` is delivered (and so acknowledged).
        case markDelivered(through: Int64)
        /// Push nothing more until the delegate is set again.
        case disable(DisableReason)
    }

    public typealias Transition = LifecycleTransition<DeliveryLifecycle>

    /// One offered event that is out: sent, or waiting to be sent again.
    struct Slot: Equatable {
        enum Progress: Equatable {
            case inFlight
            case backingOff
        }

        let seq: Int64
        var attempt: Int
        var progress: Progress
    }

    enum State: Equatable {
        /// The events out, in `seq` order: at most `maxInFlight`. Every other event up to
        /// `offeredThrough` is delivered.
        case delivering([Slot])
        case disabled(DisableReason)
    }

    var current: State
    /// Every event up to here is delivered.
    public private(set) var deliveredThrough: Int64
    /// The last event offered.
    private(set) var offeredThrough: Int64
    public let maxInFlight: Int
    public let schedule: [Double]

    init(_ state: State, deliveredThrough: Int64, offeredThrough: Int64, maxInFlight: Int, schedule: [Double]) {
        current = state
        self.deliveredThrough = deliveredThrough
        self.offeredThrough = offeredThrough
        self.maxInFlight = maxInFlight
        self.schedule = schedule
    }

    /// Delivery after `deliveredThrough`, as the store kept it: a delegate disabled before stays so.
    public init(deliveredThrough: Int64, maxInFlight: Int = 1, schedule: [Double] = standardSchedule,
                disabled: DisableReason? = nil)
    {
        self.init(disabled.map(State.disabled) ?? .delivering([]), deliveredThrough: deliveredThrough,
                  offeredThrough: deliveredThrough, maxInFlight: max(1, maxInFlight), schedule: schedule)
    }

    public var isDisabled: Bool {
        if case .disabled = current { return true }
        return false
    }

    /// Whether another event may be offered: enabled, and fewer than `maxInFlight` out.
    public var wantsEvent: Bool {
        guard case .delivering(let slots) = current else { return false }
        return slots.count < maxInFlight
    }

    public mutating func handle(_ event: Event) -> Transition {
        let before = self
        guard let actions = transition(event) else { return .invalid(from: before, event: event) }
        return .perform(actions)
    }

    private mutating func transition(_ event: Event) -> [Action]? {
        guard case .delivering(var slots) = current else {
            switch event {
            case .delegateReplaced:
                current = .delivering([])
                offeredThrough = deliveredThrough
                return []
            default:
                // Nothing is pushed to a disabled delegate; answers to attempts sent before it was
                // disabled, and their timers, change nothing. Offered events wait for pulls.
                return []
            }
        }
        switch event {
        case .eventAvailable(let seq):
            guard seq > offeredThrough, wantsEvent else { return nil }
            offeredThrough = seq
            slots.append(Slot(seq: seq, attempt: 1, progress: .inFlight))
            current = .delivering(slots)
            return [.send(seq: seq, attempt: 1)]
        case .eventSkipped(let seq):
            // Skipping takes no room in flight: nothing is sent.
            guard seq > offeredThrough else { return nil }
            offeredThrough = seq
            return advance(slots)
        case .attemptSucceeded(let seq):
            guard let i = slots.firstIndex(where: { $0.seq == seq && $0.progress == .inFlight }) else { return nil }
            slots.remove(at: i)
            return advance(slots)
        case .attemptFailed(let seq, let retryAfter, let jitter):
            guard let i = slots.firstIndex(where: { $0.seq == seq && $0.progress == .inFlight }) else { return nil }
            let made = slots[i].attempt
            guard made < schedule.count else {
                current = .disabled(.exhausted(attempts: made))
                return [.disable(.exhausted(attempts: made))]
            }
            // A `Retry-After` asking for longer than the schedule wins, up to a day.
            var delay = schedule[made] * jitter
            if let retryAfter { delay = max(delay, min(retryAfter, Self.longestRetryAfter)) }
            slots[i].progress = .backingOff
            current = .delivering(slots)
            return [.scheduleRetry(seq: seq, after: delay)]
        case .gone(let seq):
            guard slots.contains(where: { $0.seq == seq && $0.progress == .inFlight }) else { return nil }
            current = .disabled(.gone)
            return [.disable(.gone)]
        case .timerFired(let seq):
            // Timers are not withdrawn: one whose event no longer waits (the delegate was set
            // again meanwhile) is stale.
            guard let i = slots.firstIndex(where: { $0.seq == seq && $0.progress == .backingOff }) else { return [] }
            slots[i].attempt += 1
            slots[i].progress = .inFlight
            current = .delivering(slots)
            return [.send(seq: seq, attempt: slots[i].attempt)]
        case .delegateReplaced:
            // Attempts under way went to the old delegate: what they delivered counts only if
            // it was counted already. The new one gets everything after `deliveredThrough`.
            current = .delivering([])
            offeredThrough = deliveredThrough
            return []
        }
    }

    /// Counts every offered event before the earliest one out (all of them when none is out) as
    /// delivered.
    private mutating func advance(_ slots: [Slot]) -> [Action] {
        current = .delivering(slots)
        let through = slots.first.map { $0.seq - 1 } ?? offeredThrough
        guard through > deliveredThrough else { return [] }
        deliveredThrough = through
        return [.markDelivered(through: through)]
    }
}
