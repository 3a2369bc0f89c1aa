import Testing
@testable import Lifecycles

/// Every state of the session machine against every event: the rows list what each pair does; a
/// pair not listed must be refused as invalid, leaving the value as it was.
struct SessionLifecycleTests {
    typealias S = SessionLifecycle.State
    typealias E = SessionLifecycle.Event
    typealias A = SessionLifecycle.Action

    static let states: [S] = [
        .active, .invalidating(.finish), .invalidating(.cancel),
        .storingInvalidation(.finish), .storingInvalidation(.cancel), .invalidated, .removed,
    ]

    static let events: [E] = [
        .invalidate(.finish), .invalidate(.cancel), .tasksSettled,
        .invalidationStored(eventsPending: true), .invalidationStored(eventsPending: false),
        .eventsAcknowledged, .reattach, .createTasks,
    ]

    static let refused: [A] = [.refuse(.sessionInvalidated)]

    static let table: [(from: S, event: E, to: S, actions: [A])] = [
        (.active, .invalidate(.finish), .invalidating(.finish), [.writeSession, .cancelTasks(.notRunning)]),
        (.active, .invalidate(.cancel), .invalidating(.cancel), [.writeSession, .cancelTasks(.all)]),
        (.active, .tasksSettled, .active, []),
        (.active, .eventsAcknowledged, .active, []),
        (.active, .reattach, .active, []),
        (.active, .createTasks, .active, []),

        (.invalidating(.finish), .invalidate(.finish), .invalidating(.finish), [.writeSession, .cancelTasks(.notRunning)]),
        (.invalidating(.finish), .invalidate(.cancel), .invalidating(.cancel), [.writeSession, .cancelTasks(.all)]),
        (.invalidating(.finish), .tasksSettled, .storingInvalidation(.finish), [.leaveEngine, .writeInvalidated]),
        (.invalidating(.finish), .eventsAcknowledged, .invalidating(.finish), []),
        (.invalidating(.finish), .reattach, .invalidating(.finish), refused),
        (.invalidating(.finish), .createTasks, .invalidating(.finish), refused),

        (.invalidating(.cancel), .invalidate(.finish), .invalidating(.cancel), [.writeSession, .cancelTasks(.notRunning)]),
        (.invalidating(.cancel), .invalidate(.cancel), .invalidating(.cancel), [.writeSession, .cancelTasks(.all)]),
        (.invalidating(.cancel), .tasksSettled, .storingInvalidation(.cancel), [.leaveEngine, .writeInvalidated]),
        (.invalidating(.cancel), .eventsAcknowledged, .invalidating(.cancel), []),
        (.invalidating(.cancel), .reattach, .invalidating(.cancel), refused),
        (.invalidating(.cancel), .createTasks, .invalidating(.cancel), refused),

        (.storingInvalidation(.finish), .invalidate(.finish), .storingInvalidation(.finish), []),
        (.storingInvalidation(.finish), .invalidate(.cancel), .storingInvalidation(.finish), []),
        (.storingInvalidation(.finish), .tasksSettled, .storingInvalidation(.finish), []),
        (.storingInvalidation(.finish), .invalidationStored(eventsPending: true), .invalidated, []),
        (.storingInvalidation(.finish), .invalidationStored(eventsPending: false), .removed, [.remove]),
        (.storingInvalidation(.finish), .eventsAcknowledged, .storingInvalidation(.finish), []),
        (.storingInvalidation(.finish), .reattach, .storingInvalidation(.finish), refused),
        (.storingInvalidation(.finish), .createTasks, .storingInvalidation(.finish), refused),

        (.storingInvalidation(.cancel), .invalidate(.finish), .storingInvalidation(.cancel), []),
        (.storingInvalidation(.cancel), .invalidate(.cancel), .storingInvalidation(.cancel), []),
        (.storingInvalidation(.cancel), .tasksSettled, .storingInvalidation(.cancel), []),
        (.storingInvalidation(.cancel), .invalidationStored(eventsPending: true), .invalidated, []),
        (.storingInvalidation(.cancel), .invalidationStored(eventsPending: false), .removed, [.remove]),
        (.storingInvalidation(.cancel), .eventsAcknowledged, .storingInvalidation(.cancel), []),
        (.storingInvalidation(.cancel), .reattach, .storingInvalidation(.cancel), refused),
        (.storingInvalidation(.cancel), .createTasks, .storingInvalidation(.cancel), refused),

        (.invalidated, .invalidate(.finish), .invalidated, []),
        (.invalidated, .invalidate(.cancel), .invalidated, []),
        (.invalidated, .tasksSettled, .invalidated, []),
        (.invalidated, .eventsAcknowledged, .removed, [.remove]),
        (.invalidated, .reattach, .removed, [.remove, .createAnew]),
        (.invalidated, .createTasks, .invalidated, refused),
    ]

    @Test func everyStateAgainstEveryEvent() {
        let table = TransitionTable<SessionLifecycle, S>(
            states: Self.states.map { ($0, SessionLifecycle($0)) }, events: Self.events,
            rows: Self.table.map { row in .init(from: row.from, event: row.event, actions: row.actions) { $0.current == row.to } })
        #expect(table.checkEveryPair() == 56)
    }

    @Test func showsTheStoredStatusAndMode() {
        let shown: [(S, SessionLifecycle.Status, SessionLifecycle.InvalidateMode?)] = [
            (.active, .active, nil), (.invalidating(.cancel), .invalidating, .cancel),
            // Not invalidated before its event is committed.
            (.storingInvalidation(.finish), .invalidating, .finish),
            (.invalidated, .invalidated, nil), (.removed, .invalidated, nil),
        ]
        for (state, status, mode) in shown {
            #expect(SessionLifecycle(state).status == status, "\(state)")
            #expect(SessionLifecycle(state).invalidateMode == mode, "\(state)")
        }
    }

    @Test func restoresWhatTheStoreKept() {
        #expect(SessionLifecycle(restoring: .active, mode: nil).current == .active)
        #expect(SessionLifecycle(restoring: .invalidating, mode: .cancel).current == .invalidating(.cancel))
        #expect(SessionLifecycle(restoring: .invalidating, mode: nil).current == .invalidating(.finish))
        #expect(SessionLifecycle(restoring: .invalidated, mode: .finish).current == .invalidated)
    }

    /// finishTasksAndInvalidate: the session refuses new tasks at once, and is invalidated only
    /// once its last task completed and the invalidation is stored.
    @Test func finishWaitsForTheLastTask() {
        var session = SessionLifecycle()
        #expect(session.handle(.invalidate(.finish)) == .perform([.writeSession, .cancelTasks(.notRunning)]))
        #expect(session.handle(.createTasks) == .perform([.refuse(.sessionInvalidated)]))
        #expect(session.status == .invalidating)
        #expect(session.handle(.tasksSettled) == .perform([.leaveEngine, .writeInvalidated]))
        #expect(session.handle(.tasksSettled) == .perform([]))
        #expect(session.handle(.invalidationStored(eventsPending: true)) == .perform([]))
        #expect(session.status == .invalidated)
        #expect(session.handle(.eventsAcknowledged) == .perform([.remove]))
    }
}
