/// What every lifecycle here is: a value told what happened, one event at a time, that answers
/// either the actions its owner must perform or that the event cannot happen where it is — and
/// then stays exactly as it was. Owners keep the value under their own confinement (a lock, a
/// queue) and perform the actions in order; the value itself has no clock, thread or I/O, so every
/// (state, event) pair can be tested on its own.
public protocol Lifecycle: Sendable, Equatable {
    associatedtype Event: Sendable, Equatable
    associatedtype Action: Sendable, Equatable

    mutating func handle(_ event: Event) -> LifecycleTransition<Self>
}

/// A lifecycle's answer to one event.
public enum LifecycleTransition<Machine: Lifecycle>: Sendable, Equatable {
    /// Done; perform these in order (possibly none: a documented no-op).
    case perform([Machine.Action])
    /// The event cannot happen here; the value is unchanged.
    case invalid(from: Machine, event: Machine.Event)
}
