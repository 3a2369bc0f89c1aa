import TransferVocabulary

/// One transfer's life in the engine as a value: waiting for a running slot, its files being
/// opened, its easy handle in the multi handle (and why that handle is paused, or what comes after
/// it), and how it ended. `handle` takes what happened and says what the loop must do; the loop
/// performs the actions in order (`MultiLoop.tell`). Nothing here touches curl, a file or a clock,
/// so every transition is tested on its own. The `Transfer` keeps the resources (the easy handle,
/// the files, the counters); which of them exist follows from the state.
///
/// A running transfer's handle is one `Connection`. A segmented download — one download fetched
/// as several ranges at once — would hold one `Connection` per range's easy handle in `running`,
/// each with its own pauses and redirect: an event about a handle would name it, a stop would
/// finish them all, and the download would end when the last one is done. Nothing outside
/// `running` would change: a slot, its files and its ending stay the download's.
struct TransferLifecycle: Equatable, Sendable {
    /// Why a running handle is paused. The two are independent: the pacer pauses both directions'
    /// callbacks, a full direct output only the write callback, so an upload can be paced while a
    /// download waits for a chunk.
    enum PauseReason: Hashable, Sendable {
        /// The session's or engine's bandwidth is spent (`Pacer`).
        case pacer
        /// The direct output has no free chunk until the hasher gives one back (`DirectOutput`).
        case directOutput
    }

    /// One easy handle in the multi handle.
    struct Connection: Equatable, Sendable {
        /// Empty while bytes may move: only then does the idle timeout count.
        var pausedBy: Set<PauseReason> = []
        /// The redirect to follow by starting this handle again (`Transfer.restartsForCredential`),
        /// once curl reports the hop ended.
        var redirect: CredentialRedirect?
        /// A stop decided inside a curl callback (the lease's fence), carried out when curl reports
        /// the handle done.
        var stop: StopReason?
    }

    /// How a transfer ended; what its outcome says.
    enum Ending: Equatable, Sendable {
        /// curl is done with the request, well or not.
        case finished
        /// No byte moved for the idle timeout.
        case idle
        /// Stopped as asked (or fenced); `started`: it had taken an easy handle.
        case stopped(StopReason, started: Bool)
        /// It could not start (the session's TLS files, its own files).
        case refused(TransferFailure)
    }

    enum State: Equatable, Sendable {
        /// Submitted, waiting for a running slot: it holds nothing.
        case waiting
        /// Admitted: it holds a slot while its files are opened off the loop; a stop asked for
        /// meanwhile waits for them, so the files go back with its outcome.
        case preparing(stop: StopReason?)
        /// Its easy handle is in the multi handle.
        case running(Connection)
        /// Its outcome is on its way: nothing happens to it any more.
        case ended(Ending)
    }

    enum Event: Equatable, Sendable {
        /// It got a slot; `preparing`: its files are still to be opened.
        case admitted(preparing: Bool)
        /// Its files are open.
        case prepared
        /// It cannot start.
        case refused(TransferFailure)
        /// Stop asked for (from the loop, outside curl's callbacks).
        case stop(StopReason)
        /// The lease's deadline passed (`WriteFence`): nothing more may be written.
        case fenced
        case paused(PauseReason)
        /// What paused the handle is over (a pacer tick, a chunk given back).
        case unpaused(PauseReason)
        /// A redirect is to be followed by starting the handle again at its target.
        case redirect(CredentialRedirect)
        /// No byte moved for the idle timeout.
        case idleTimeout
        /// curl is done with the handle; `writeRefused`: a callback of ours ended it
        /// (`CURLE_WRITE_ERROR`), as a redirect to restart does.
        case handleDone(writeRefused: Bool)
    }

    enum Action: Equatable, Sendable {
        /// Open the files off the loop; report `prepared` or `refused`.
        case prepareFiles
        /// Take an easy handle, configure it and add it to the multi handle.
        case launch
        /// Start the same easy handle again at the redirect's target.
        case restart(CredentialRedirect)
        /// Let curl hand the paused piece over again.
        case unpause
        /// Take the handle off the pacer's list of paused ones: it ends or starts again.
        case leavePacer
        /// Take the handle out of the multi handle, free the slot, deliver the outcome.
        case finish
        /// Free the slot of a transfer that never took a handle, deliver its outcome.
        case refuse
        /// Deliver the outcome of a transfer taken out of the admission queue (it had no slot).
        case withdraw
    }

    enum Transition: Equatable, Sendable {
        /// Done; perform these in order (possibly none).
        case perform([Action])
        /// The event cannot happen here; the value is unchanged.
        case invalid(from: TransferLifecycle, event: Event)
    }

    private(set) var current: State

    init(_ state: State = .waiting) {
        current = state
    }

    /// Moves to the next state and answers the actions for `event`; an event that cannot happen
    /// here leaves the value as it was.
    mutating func handle(_ event: Event) -> Transition {
        let before = self
        let actions: [Action]? = switch current {
        case .waiting: waiting(event)
        case .preparing(let stop): preparing(stop, event)
        case .running(let connection): running(connection, event)
        case .ended(let ending): ended(ending, event)
        }
        return actions.map(Transition.perform) ?? .invalid(from: before, event: event)
    }

    private mutating func waiting(_ event: Event) -> [Action]? {
        switch event {
        case .admitted(let preparing):
            current = preparing ? .preparing(stop: nil) : .running(Connection())
            return [preparing ? .prepareFiles : .launch]
        case .refused(let failure):
            current = .ended(.refused(failure))
            return [.refuse]
        case .fenced:
            // Found at admission: not even the output is opened.
            current = .ended(.stopped(.fenced, started: false))
            return [.refuse]
        case .stop(let reason):
            current = .ended(.stopped(reason, started: false))
            return [.withdraw]
        default:
            return nil
        }
    }

    /// Files being opened: a stop is remembered and carried out when they are back.
    private mutating func preparing(_ stop: StopReason?, _ event: Event) -> [Action]? {
        switch (event, stop) {
        case (.stop(let reason), _):
            current = .preparing(stop: reason)
            return []
        case (.prepared, nil):
            current = .running(Connection())
            return [.launch]
        case (.refused(let failure), nil):
            current = .ended(.refused(failure))
            return [.refuse]
        case (.prepared, let stop?), (.refused, let stop?):
            // The stop was asked first: the outcome says stopped, whatever the files did.
            current = .ended(.stopped(stop, started: false))
            return [.refuse]
        default:
            return nil
        }
    }

    private mutating func running(_ connection: Connection, _ event: Event) -> [Action]? {
        var changed = connection
        switch event {
        case .stop(let reason):
            current = .ended(.stopped(reason, started: true))
            return leaving(connection) + [.finish]
        case .fenced:
            // Inside a curl callback: the handle ends when curl reports it done.
            changed.stop = .fenced
            current = .running(changed)
            return []
        case .paused(let reason):
            changed.pausedBy.insert(reason)
            current = .running(changed)
            return []
        case .unpaused(let reason):
            // A chunk given back after a restart cleared the pause finds nothing to resume.
            guard changed.pausedBy.remove(reason) != nil else { return [] }
            current = .running(changed)
            return [.unpause]
        case .redirect(let redirect):
            changed.redirect = redirect
            current = .running(changed)
            return []
        case .idleTimeout:
            guard connection.pausedBy.isEmpty else { return nil }
            current = .ended(connection.stop.map { .stopped($0, started: true) } ?? .idle)
            return leaving(connection) + [.finish]
        case .handleDone(let writeRefused):
            if let redirect = connection.redirect, connection.stop == nil, writeRefused {
                // The hop ended as asked: the same handle starts again, nothing paused or pending.
                current = .running(Connection())
                return leaving(connection) + [.restart(redirect)]
            }
            current = .ended(connection.stop.map { .stopped($0, started: true) } ?? .finished)
            return leaving(connection) + [.finish]
        default:
            return nil
        }
    }

    /// A handle that ends or starts again is no longer the pacer's to resume.
    private func leaving(_ connection: Connection) -> [Action] {
        connection.pausedBy.contains(.pacer) ? [.leavePacer] : []
    }

    /// The outcome is on its way: late requests change nothing, except a fence found as the
    /// output closes, which the outcome must report (nothing more was written).
    private mutating func ended(_ ending: Ending, _ event: Event) -> [Action]? {
        switch event {
        case .stop, .unpaused:
            return []
        case .fenced:
            current = .ended(.stopped(.fenced, started: ending.started))
            return []
        default:
            return nil
        }
    }
}

extension TransferLifecycle {
    /// Its easy handle is in the multi handle.
    var isRunning: Bool {
        if case .running = current { true } else { false }
    }

    /// Running with nothing paused: the idle timeout counts this time.
    var countsIdleTime: Bool {
        if case .running(let connection) = current { connection.pausedBy.isEmpty } else { false }
    }

    func isPaused(by reason: PauseReason) -> Bool {
        if case .running(let connection) = current { connection.pausedBy.contains(reason) } else { false }
    }

    /// The stop asked for or decided, once it is certain: ended stopped, or fenced while running.
    var stopReason: StopReason? {
        switch current {
        case .running(let connection): connection.stop
        case .ended(.stopped(let reason, _)): reason
        default: nil
        }
    }

    var ending: Ending? {
        if case .ended(let ending) = current { ending } else { nil }
    }
}

extension TransferLifecycle.Ending {
    /// It had taken an easy handle (`TransferOutcome.started`).
    var started: Bool {
        switch self {
        case .finished, .idle: true
        case .stopped(_, let started): started
        case .refused: false
        }
    }
}
