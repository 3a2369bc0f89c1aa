import Testing
@testable import Lifecycles

/// Every state of one session's webhook delivery against every event: the rows list what each
/// pair does; a pair not listed must be refused as invalid, leaving the value as it was. Events up
/// to 4 are delivered; event 5 is the one out. In the states "… behind", two may be out and event
/// 6 was delivered (or skipped) while 5 is still out.
struct DeliveryLifecycleTests {
    typealias E = DeliveryLifecycle.Event
    typealias A = DeliveryLifecycle.Action
    typealias Slot = DeliveryLifecycle.Slot

    static let last = DeliveryLifecycle.standardSchedule.count

    static func delivery(_ state: DeliveryLifecycle.State, offered: Int64 = 4, delivered: Int64 = 4,
                         maxInFlight: Int = 1) -> DeliveryLifecycle {
        DeliveryLifecycle(state, deliveredThrough: delivered, offeredThrough: offered, maxInFlight: maxInFlight,
                          schedule: DeliveryLifecycle.standardSchedule)
    }

    static let idle = delivery(.delivering([]))
    static func inFlight(attempt: Int) -> DeliveryLifecycle {
        delivery(.delivering([Slot(seq: 5, attempt: attempt, progress: .inFlight)]), offered: 5)
    }
    static let backingOff = delivery(.delivering([Slot(seq: 5, attempt: 2, progress: .backingOff)]), offered: 5)
    /// Event 6 delivered while 5 is out: nothing of 6 remains but `offeredThrough`.
    static func behind(_ progress: Slot.Progress, attempt: Int) -> DeliveryLifecycle {
        delivery(.delivering([Slot(seq: 5, attempt: attempt, progress: progress)]), offered: 6, maxInFlight: 2)
    }
    static let idleTwo = delivery(.delivering([]), maxInFlight: 2)
    static let gone = delivery(.disabled(.gone))
    static let exhausted = delivery(.disabled(.exhausted(attempts: last)))

    static let states: [(name: String, value: DeliveryLifecycle)] = [
        ("idle", idle), ("in flight", inFlight(attempt: 1)), ("in flight, last attempt", inFlight(attempt: last)),
        ("backing off", backingOff), ("disabled: gone", gone), ("disabled: exhausted", exhausted),
        ("in flight, 6 delivered behind", behind(.inFlight, attempt: 1)),
        ("backing off, 6 delivered behind", behind(.backingOff, attempt: 2)),
    ]

    static let events: [E] = [
        .eventAvailable(seq: 6), .eventSkipped(seq: 6), .attemptSucceeded(seq: 5),
        .attemptFailed(seq: 5, retryAfter: nil, jitter: 1.1), .attemptFailed(seq: 5, retryAfter: 600, jitter: 0.9),
        .gone(seq: 5), .timerFired(seq: 5), .delegateReplaced,
    ]

    /// Nothing changes for a disabled delegate but setting it again.
    static func disabledRows(_ name: String, _ value: DeliveryLifecycle) -> [(String, E, DeliveryLifecycle, [A])] {
        events.map { event in
            event == .delegateReplaced ? (name, event, idle, []) : (name, event, value, [])
        }
    }

    static let table: [(from: String, event: E, to: DeliveryLifecycle, actions: [A])] = [
        ("idle", .eventAvailable(seq: 6),
         delivery(.delivering([Slot(seq: 6, attempt: 1, progress: .inFlight)]), offered: 6), [.send(seq: 6, attempt: 1)]),
        ("idle", .eventSkipped(seq: 6), delivery(.delivering([]), offered: 6, delivered: 6), [.markDelivered(through: 6)]),
        ("idle", .timerFired(seq: 5), idle, []),
        ("idle", .delegateReplaced, idle, []),

        // The schedule's second delay (5 s) after the first attempt, with the caller's jitter;
        // a longer Retry-After wins.
        // A skipped event counts as delivered, but only once the one before it is: it leaves
        // nothing behind but how far events were offered.
        ("in flight", .eventSkipped(seq: 6), delivery(.delivering([Slot(seq: 5, attempt: 1, progress: .inFlight)]), offered: 6), []),
        ("in flight", .attemptSucceeded(seq: 5), delivery(.delivering([]), offered: 5, delivered: 5), [.markDelivered(through: 5)]),
        ("in flight", .attemptFailed(seq: 5, retryAfter: nil, jitter: 1.1),
         delivery(.delivering([Slot(seq: 5, attempt: 1, progress: .backingOff)]), offered: 5), [.scheduleRetry(seq: 5, after: 5 * 1.1)]),
        ("in flight", .attemptFailed(seq: 5, retryAfter: 600, jitter: 0.9),
         delivery(.delivering([Slot(seq: 5, attempt: 1, progress: .backingOff)]), offered: 5), [.scheduleRetry(seq: 5, after: 600)]),
        ("in flight", .gone(seq: 5), delivery(.disabled(.gone), offered: 5), [.disable(.gone)]),
        ("in flight", .timerFired(seq: 5), inFlight(attempt: 1), []),
        ("in flight", .delegateReplaced, idle, []),

        ("in flight, last attempt", .eventSkipped(seq: 6),
         delivery(.delivering([Slot(seq: 5, attempt: last, progress: .inFlight)]), offered: 6), []),
        ("in flight, last attempt", .attemptSucceeded(seq: 5), delivery(.delivering([]), offered: 5, delivered: 5),
         [.markDelivered(through: 5)]),
        ("in flight, last attempt", .attemptFailed(seq: 5, retryAfter: nil, jitter: 1.1),
         delivery(.disabled(.exhausted(attempts: last)), offered: 5), [.disable(.exhausted(attempts: last))]),
        ("in flight, last attempt", .attemptFailed(seq: 5, retryAfter: 600, jitter: 0.9),
         delivery(.disabled(.exhausted(attempts: last)), offered: 5), [.disable(.exhausted(attempts: last))]),
        ("in flight, last attempt", .gone(seq: 5), delivery(.disabled(.gone), offered: 5), [.disable(.gone)]),
        ("in flight, last attempt", .timerFired(seq: 5), inFlight(attempt: last), []),
        ("in flight, last attempt", .delegateReplaced, idle, []),

        ("backing off", .eventSkipped(seq: 6),
         delivery(.delivering([Slot(seq: 5, attempt: 2, progress: .backingOff)]), offered: 6), []),
        ("backing off", .timerFired(seq: 5), inFlight(attempt: 3), [.send(seq: 5, attempt: 3)]),
        ("backing off", .delegateReplaced, idle, []),

        // Event 5 delivered at last carries delivery over 6, delivered before it.
        ("in flight, 6 delivered behind", .attemptSucceeded(seq: 5),
         delivery(.delivering([]), offered: 6, delivered: 6, maxInFlight: 2), [.markDelivered(through: 6)]),
        ("in flight, 6 delivered behind", .attemptFailed(seq: 5, retryAfter: nil, jitter: 1.1),
         behind(.backingOff, attempt: 1), [.scheduleRetry(seq: 5, after: 5 * 1.1)]),
        ("in flight, 6 delivered behind", .attemptFailed(seq: 5, retryAfter: 600, jitter: 0.9),
         behind(.backingOff, attempt: 1), [.scheduleRetry(seq: 5, after: 600)]),
        ("in flight, 6 delivered behind", .gone(seq: 5), delivery(.disabled(.gone), offered: 6, maxInFlight: 2), [.disable(.gone)]),
        ("in flight, 6 delivered behind", .timerFired(seq: 5), behind(.inFlight, attempt: 1), []),
        ("in flight, 6 delivered behind", .delegateReplaced, idleTwo, []),

        ("backing off, 6 delivered behind", .timerFired(seq: 5), behind(.inFlight, attempt: 3), [.send(seq: 5, attempt: 3)]),
        ("backing off, 6 delivered behind", .delegateReplaced, idleTwo, []),
    ] + disabledRows("disabled: gone", gone) + disabledRows("disabled: exhausted", exhausted)

    @Test func everyStateAgainstEveryEvent() {
        let table = TransitionTable<DeliveryLifecycle, String>(
            states: Self.states.map { ($0.name, $0.value) }, events: Self.events,
            rows: Self.table.map { row in .init(from: row.from, event: row.event, actions: row.actions) { $0 == row.to } })
        #expect(table.checkEveryPair() == 64)
    }

    /// One event at a time: tried on the schedule until it is received, then the next.
    @Test func retriesOnTheScheduleThenDisables() {
        var delivery = DeliveryLifecycle(deliveredThrough: 0)
        #expect(delivery.handle(.eventAvailable(seq: 1)) == .perform([.send(seq: 1, attempt: 1)]))
        #expect(!delivery.wantsEvent)
        for attempt in 1..<Self.last {
            #expect(delivery.handle(.attemptFailed(seq: 1, retryAfter: nil, jitter: 1)) ==
                .perform([.scheduleRetry(seq: 1, after: DeliveryLifecycle.standardSchedule[attempt])]))
            #expect(delivery.handle(.timerFired(seq: 1)) == .perform([.send(seq: 1, attempt: attempt + 1)]))
        }
        #expect(delivery.handle(.attemptFailed(seq: 1, retryAfter: nil, jitter: 1)) == .perform([.disable(.exhausted(attempts: 10))]))
        #expect(delivery.isDisabled)
        #expect(delivery.handle(.delegateReplaced) == .perform([]))
        #expect(delivery.handle(.eventAvailable(seq: 1)) == .perform([.send(seq: 1, attempt: 1)]))
    }

    /// A Retry-After longer than a day is held to a day.
    @Test func retryAfterIsHeldToADay() {
        var delivery = DeliveryLifecycle(deliveredThrough: 0)
        _ = delivery.handle(.eventAvailable(seq: 1))
        #expect(delivery.handle(.attemptFailed(seq: 1, retryAfter: 1e9, jitter: 1)) == .perform([.scheduleRetry(seq: 1, after: 86_400)]))
    }

    /// With several events in flight, each backs off on its own, and delivery is counted in seq
    /// order: an event received before an earlier one waits for it.
    @Test func severalInFlightAreCountedInSeqOrder() {
        var delivery = DeliveryLifecycle(deliveredThrough: 0, maxInFlight: 2)
        #expect(delivery.handle(.eventAvailable(seq: 1)) == .perform([.send(seq: 1, attempt: 1)]))
        #expect(delivery.handle(.eventAvailable(seq: 2)) == .perform([.send(seq: 2, attempt: 1)]))
        #expect(!delivery.wantsEvent)
        #expect(delivery.handle(.attemptFailed(seq: 1, retryAfter: nil, jitter: 1)) == .perform([.scheduleRetry(seq: 1, after: 5)]))
        #expect(delivery.handle(.attemptSucceeded(seq: 2)) == .perform([]))
        #expect(delivery.deliveredThrough == 0)
        // Event 1 backing off still takes its room.
        #expect(delivery.handle(.eventAvailable(seq: 3)) == .perform([.send(seq: 3, attempt: 1)]))
        #expect(delivery.handle(.eventAvailable(seq: 4)) == .invalid(from: delivery, event: .eventAvailable(seq: 4)))
        #expect(delivery.handle(.timerFired(seq: 1)) == .perform([.send(seq: 1, attempt: 2)]))
        #expect(delivery.handle(.attemptSucceeded(seq: 1)) == .perform([.markDelivered(through: 2)]))
        #expect(delivery.handle(.attemptSucceeded(seq: 3)) == .perform([.markDelivered(through: 3)]))
        #expect(delivery.wantsEvent)
    }

    /// An event backing off for its whole schedule does not make delivery carry the events
    /// delivered behind it: however many, the value holds the events out and no more, and when the
    /// one backing off is delivered, delivery moves past all of them at once.
    @Test func eventsDeliveredBehindOneBackingOffLeaveNothingBehind() {
        var delivery = DeliveryLifecycle(deliveredThrough: 0, maxInFlight: 4)
        #expect(delivery.handle(.eventAvailable(seq: 1)) == .perform([.send(seq: 1, attempt: 1)]))
        #expect(delivery.handle(.attemptFailed(seq: 1, retryAfter: 3600, jitter: 1)) == .perform([.scheduleRetry(seq: 1, after: 3600)]))
        for seq in Int64(2)...1_001 {
            if seq % 10 == 0 {
                #expect(delivery.handle(.eventSkipped(seq: seq)) == .perform([]))
                continue
            }
            #expect(delivery.handle(.eventAvailable(seq: seq)) == .perform([.send(seq: seq, attempt: 1)]))
            #expect(delivery.handle(.attemptSucceeded(seq: seq)) == .perform([]))
            #expect(delivery.wantsEvent)
        }
        guard case .delivering(let slots) = delivery.current else {
            Issue.record("delivery stopped")
            return
        }
        #expect(slots.count == 1, "\(slots.count) slots kept for the one event out")
        #expect(slots.first == Slot(seq: 1, attempt: 1, progress: .backingOff))
        #expect(delivery.deliveredThrough == 0 && delivery.offeredThrough == 1_001)
        #expect(delivery.handle(.timerFired(seq: 1)) == .perform([.send(seq: 1, attempt: 2)]))
        #expect(delivery.handle(.attemptSucceeded(seq: 1)) == .perform([.markDelivered(through: 1_001)]))
        #expect(delivery.deliveredThrough == 1_001)
    }

    @Test func offersMustFollowInSeqOrder() {
        var delivery = DeliveryLifecycle(deliveredThrough: 7)
        #expect(delivery.handle(.eventAvailable(seq: 7)) == .invalid(from: delivery, event: .eventAvailable(seq: 7)))
        #expect(delivery.handle(.eventSkipped(seq: 3)) == .invalid(from: delivery, event: .eventSkipped(seq: 3)))
    }
}
