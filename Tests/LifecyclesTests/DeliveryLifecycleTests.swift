import Testing
@testable import Lifecycles

/// Every state of one session's webhook delivery against every event: the rows list what each
/// pair does; a pair not listed must be refused as invalid, leaving the value as it was. Events up
/// to 4 are delivered; event 5 is the one out.
struct DeliveryLifecycleTests {
    typealias E = DeliveryLifecycle.Event
    typealias A = DeliveryLifecycle.Action
    typealias Slot = DeliveryLifecycle.Slot

    static let last = DeliveryLifecycle.standardSchedule.count

    static func delivery(_ state: DeliveryLifecycle.State, offered: Int64 = 4, delivered: Int64 = 4) -> DeliveryLifecycle {
        DeliveryLifecycle(state, deliveredThrough: delivered, offeredThrough: offered, maxInFlight: 1,
                          schedule: DeliveryLifecycle.standardSchedule)
    }

    static let idle = delivery(.delivering([]))
    static func inFlight(attempt: Int) -> DeliveryLifecycle {
        delivery(.delivering([Slot(seq: 5, attempt: attempt, progress: .inFlight)]), offered: 5)
    }
    static let backingOff = delivery(.delivering([Slot(seq: 5, attempt: 2, progress: .backingOff)]), offered: 5)
    static let gone = delivery(.disabled(.gone))
    static let exhausted = delivery(.disabled(.exhausted(attempts: last)))

    static let states: [(name: String, value: DeliveryLifecycle)] = [
        ("idle", idle), ("in flight", inFlight(attempt: 1)), ("in flight, last attempt", inFlight(attempt: last)),
        ("backing off", backingOff), ("disabled: gone", gone), ("disabled: exhausted", exhausted),
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
        ("in flight", .eventSkipped(seq: 6),
         delivery(.delivering([Slot(seq: 5, attempt: 1, progress: .inFlight), Slot(seq: 6, attempt: 0, progress: .delivered)]),
                  offered: 6), []),
        ("in flight", .attemptSucceeded(seq: 5), delivery(.delivering([]), offered: 5, delivered: 5), [.markDelivered(through: 5)]),
        ("in flight", .attemptFailed(seq: 5, retryAfter: nil, jitter: 1.1),
         delivery(.delivering([Slot(seq: 5, attempt: 1, progress: .backingOff)]), offered: 5), [.scheduleRetry(seq: 5, after: 5 * 1.1)]),
        ("in flight", .attemptFailed(seq: 5, retryAfter: 600, jitter: 0.9),
         delivery(.delivering([Slot(seq: 5, attempt: 1, progress: .backingOff)]), offered: 5), [.scheduleRetry(seq: 5, after: 600)]),
        ("in flight", .gone(seq: 5), delivery(.disabled(.gone), offered: 5), [.disable(.gone)]),
        ("in flight", .timerFired(seq: 5), inFlight(attempt: 1), []),
        ("in flight", .delegateReplaced, idle, []),

        ("in flight, last attempt", .eventSkipped(seq: 6),
         delivery(.delivering([Slot(seq: 5, attempt: last, progress: .inFlight), Slot(seq: 6, attempt: 0, progress: .delivered)]),
                  offered: 6), []),
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
         delivery(.delivering([Slot(seq: 5, attempt: 2, progress: .backingOff), Slot(seq: 6, attempt: 0, progress: .delivered)]),
                  offered: 6), []),
        ("backing off", .timerFired(seq: 5), inFlight(attempt: 3), [.send(seq: 5, attempt: 3)]),
        ("backing off", .delegateReplaced, idle, []),
    ] + disabledRows("disabled: gone", gone) + disabledRows("disabled: exhausted", exhausted)

    @Test func everyStateAgainstEveryEvent() {
        let table = TransitionTable<DeliveryLifecycle, String>(
            states: Self.states.map { ($0.name, $0.value) }, events: Self.events,
            rows: Self.table.map { row in .init(from: row.from, event: row.event, actions: row.actions) { $0 == row.to } })
        #expect(table.checkEveryPair() == 48)
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

    @Test func offersMustFollowInSeqOrder() {
        var delivery = DeliveryLifecycle(deliveredThrough: 7)
        #expect(delivery.handle(.eventAvailable(seq: 7)) == .invalid(from: delivery, event: .eventAvailable(seq: 7)))
        #expect(delivery.handle(.eventSkipped(seq: 3)) == .invalid(from: delivery, event: .eventSkipped(seq: 3)))
    }
}
