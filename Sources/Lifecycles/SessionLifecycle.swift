/// A session's life as a value: active, then — once `DELETE` asks — invalidating until its last
/// unfinished task completes, then invalidated (its events still readable and deliverable) until
/// they are all acknowledged or its identifier is used again, when it is removed. The caller
/// reports what happened (`handle`) and performs the actions in order.
public struct SessionLifecycle: Lifecycle {
    /// `finishTasksAndInvalidate` and `invalidateAndCancel`.
    public enum InvalidateMode: String, Sendable, Equatable, CaseIterable {
        case finish, cancel
    }

    /// The lifecycle as the API shows (and the store keeps) it.
    public enum Status: String, Sendable, Equatable, CaseIterable {
        case active, invalidating, invalidated
    }

    public enum Event: Sendable, Equatable {
        /// `DELETE /v1/sessions/{identifier}?mode=`.
        case invalidate(InvalidateMode)
        /// The session has no unfinished task left, and none is being created.
        case tasksSettled
        /// The invalidation and its `session.invalidated` event are committed; `eventsPending`
        /// when some of its events are not yet acknowledged.
        case invalidationStored(eventsPending: Bool)
        /// Every event of the session is acknowledged (or delivered).
        case eventsAcknowledged
        /// `PUT /v1/sessions/{identifier}` for a session that exists.
        case reattach
        /// A request to create tasks in the session.
        case createTasks
    }

    /// Which tasks an invalidation cancels.
    public enum CancelScope: Sendable, Equatable {
        /// Every unfinished task (`cancel`).
        case all
        /// Tasks that cannot finish on their own: suspended ones and those never started (`finish`).
        case notRunning
    }

    public enum Refusal: String, Sendable, Equatable {
        case sessionInvalidated = "session_invalidated"
    }

    public enum Action: Sendable, Equatable {
        /// Store the session's lifecycle and invalidate mode.
        case writeSession
        case cancelTasks(CancelScope)
        /// Take the session out of the transfer engine: nothing of it runs any more.
        case leaveEngine
        /// Store the session as invalidated, with its `session.invalidated` event; report
        /// `invalidationStored`.
        case writeInvalidated
        /// Answer the request with a 409 of this code.
        case refuse(Refusal)
        /// Remove the session for good: rows, events, files.
        case remove
        /// Create a new session under the identifier (after `remove`).
        case createAnew
    }

    public typealias Transition = LifecycleTransition<SessionLifecycle>

    enum State: Equatable {
        case active
        /// Waiting for its unfinished tasks to complete.
        case invalidating(InvalidateMode)
        /// No unfinished task is left; the invalidation is being stored.
        case storingInvalidation(InvalidateMode)
        case invalidated
        case removed
    }

    var current: State

    init(_ state: State) {
        current = state
    }

    /// A new session.
    public init() {
        self.init(.active)
    }

    /// A session as the store kept it. An invalidating one is told `tasksSettled` once it has no
    /// unfinished task, as at any time.
    public init(restoring status: Status, mode: InvalidateMode?) {
        switch status {
        case .active: self.init(.active)
        case .invalidating: self.init(.invalidating(mode ?? .finish))
        case .invalidated: self.init(.invalidated)
        }
    }

    public var status: Status {
        switch current {
        case .active: .active
        // Invalidated only once the event is committed: a client that sees the state finds the event.
        case .invalidating, .storingInvalidation: .invalidating
        case .invalidated, .removed: .invalidated
        }
    }

    /// The invalidate mode asked for, if any.
    public var invalidateMode: InvalidateMode? {
        switch current {
        case .invalidating(let mode), .storingInvalidation(let mode): mode
        case .active, .invalidated, .removed: nil
        }
    }

    public mutating func handle(_ event: Event) -> Transition {
        let before = self
        guard let actions = transition(event) else { return .invalid(from: before, event: event) }
        return .perform(actions)
    }

    private mutating func transition(_ event: Event) -> [Action]? {
        switch (current, event) {
        case (.active, .invalidate(let mode)):
            current = .invalidating(mode)
            return [.writeSession, .cancelTasks(Self.scope(mode))]
        case (.invalidating(let asked), .invalidate(let mode)):
            // Asked again: a cancel overrides a finish, never the other way round. What the mode
            // cancels is cancelled again — a task suspended since the first request cannot finish either.
            current = .invalidating(asked == .cancel ? .cancel : mode)
            return [.writeSession, .cancelTasks(Self.scope(mode))]
        case (.storingInvalidation, .invalidate), (.invalidated, .invalidate):
            // Nothing is left to cancel; the invalidation is stored (or being stored) as it is.
            return []

        case (.invalidating(let mode), .tasksSettled):
            current = .storingInvalidation(mode)
            return [.leaveEngine, .writeInvalidated]
        case (.active, .tasksSettled), (.storingInvalidation, .tasksSettled), (.invalidated, .tasksSettled):
            // An idle active session is just idle; an invalidation already stored or on its way
            // is not stored twice.
            return []

        case (.storingInvalidation, .invalidationStored(let eventsPending)):
            guard !eventsPending else {
                current = .invalidated
                return []
            }
            current = .removed
            return [.remove]

        case (.invalidated, .eventsAcknowledged):
            current = .removed
            return [.remove]
        case (.active, .eventsAcknowledged), (.invalidating, .eventsAcknowledged), (.storingInvalidation, .eventsAcknowledged):
            // Only an invalidated session goes when its events are read.
            return []

        case (.active, .reattach), (.active, .createTasks):
            return []
        case (.invalidating, .reattach), (.storingInvalidation, .reattach),
             (.invalidating, .createTasks), (.storingInvalidation, .createTasks), (.invalidated, .createTasks):
            return [.refuse(.sessionInvalidated)]
        case (.invalidated, .reattach):
            // An invalidated session's identifier is free: the old session goes, a new one comes.
            current = .removed
            return [.remove, .createAnew]

        default:
            return nil
        }
    }

    private static func scope(_ mode: InvalidateMode) -> CancelScope {
        mode == .cancel ? .all : .notRunning
    }
}
