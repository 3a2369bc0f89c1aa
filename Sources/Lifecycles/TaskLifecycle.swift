import TransferVocabulary

/// One task's lifecycle as a value: which of URLSession's states it is in, what holds its output
/// file (a start being prepared, a transfer in the engine, an ended attempt being settled), and what
/// the client asked for meanwhile. `handle` takes what happened and says what to do; the caller
/// performs the actions in order (a record write before what follows it) and reports back what
/// came of them as further events. Nothing here reads a clock or touches a file, so every
/// transition can be tested on its own.
///
/// A task's output file is held by at most one party at a time: while a start is being prepared,
/// a transfer runs, or an ended attempt is settled, a resume, suspend or cancel is remembered as
/// the task's *intent* and carried out when the file is let go. That is what keeps two attempts from
/// ever writing one file.
public struct TaskLifecycle: Lifecycle {
    /// What the client asked for while the output was held.
    enum Intent: Equatable {
        case run
        case suspend
        /// Suspended while the output was held, then resumed: run again once it is let go.
        case resume
        /// `shown`: the state the task shows until it completes.
        case cancel(resumeData: Bool, shown: TaskState)
    }

    /// Where a task goes once an ended attempt's output is let go (when it is to run on).
    enum Next: Equatable {
        /// Stopped for shutdown: it continues at the next start.
        case waiting
        case retrying(after: Double)
    }

    enum State: Equatable {
        /// Not stored yet.
        case new
        /// Loaded from the store at start-up, before its session's mode decided what becomes of it.
        case restored(TaskState, TaskPhase, retryDueIn: Double?)
        case suspended
        /// Running with nothing started: stopped by a shutdown, continued at the next start.
        case waiting
        /// Running, waiting for `begin_at`.
        case scheduled
        /// Running, waiting to try again.
        case retrying
        /// The output is claimed for a start being prepared.
        case starting(Intent)
        /// The engine has the transfer.
        case transferring(TaskPhase, Intent)
        /// The attempt ended; its output is being let go.
        case releasing(Next, Intent)
        /// Its completion is claimed and being stored; `shown` is the state it leaves.
        case completing(shown: TaskState)
        case completed
        case deleted
    }

    var current: State
    /// Attempts begun (`metrics.attempts`).
    public private(set) var attempts: Int

    init(_ state: State, attempts: Int = 0) {
        current = state
        self.attempts = attempts
    }

    /// A task about to be created.
    public init() {
        self.init(.new)
    }

    /// A task as the store kept it, to be told `processRestarted`. `retryDueIn`: how long a task
    /// waiting to retry still waits. A completed task is simply completed.
    public init(restoring state: TaskState, phase: TaskPhase, attempts: Int, retryDueIn: Double? = nil) {
        self.init(state == .completed ? .completed : .restored(state, phase, retryDueIn: retryDueIn), attempts: attempts)
    }

    /// The state the API shows.
    public var state: TaskState {
        switch current {
        case .new, .suspended: .suspended
        case .restored(let state, _, _): state
        case .waiting, .scheduled, .retrying: .running
        case .starting(let intent), .transferring(_, let intent), .releasing(_, let intent): intent.shown
        case .completing(let shown): shown
        case .completed, .deleted: .completed
        }
    }

    /// The phase the API shows: a running transfer's own phase, else where the task waits.
    public var phase: TaskPhase {
        switch current {
        case .restored(_, let phase, _): phase
        case .scheduled: .scheduled
        case .retrying: .retrying
        case .transferring(let phase, let intent) where intent.shown == .running: phase
        case .completed, .deleted: .finished
        default: .waiting
        }
    }

    /// The task is done with or on its way there: nothing starts it again.
    public var isCompleting: Bool {
        switch current {
        case .completing, .completed, .deleted: true
        default: false
        }
    }

    /// The completed task was forgotten: it is no longer to be found.
    public var isDeleted: Bool { current == .deleted }

    /// A cancel was asked for and is being carried out.
    public var cancelRequested: Bool {
        switch current {
        case .starting(.cancel), .transferring(_, .cancel), .releasing(_, .cancel): true
        default: false
        }
    }

    public mutating func handle(_ event: Event) -> Transition {
        let before = self
        guard let actions = transition(event) else { return .invalid(from: before, event: event) }
        return .perform(actions)
    }

    /// The actions for `event`, having moved to the next state; nil, unchanged, when it cannot happen.
    private mutating func transition(_ event: Event) -> [Action]? {
        switch current {
        case .new: new(event)
        case .restored(let state, let phase, let due): restored(state, phase, due, event)
        case .suspended, .waiting, .scheduled, .retrying: idle(event)
        case .starting(let intent): starting(intent, event)
        case .transferring(let phase, let intent): transferring(phase, intent, event)
        case .releasing(let next, let intent): releasing(next, intent, event)
        case .completing, .completed, .deleted: ended(event)
        }
    }

    private mutating func new(_ event: Event) -> [Action]? {
        guard case .created(let start) = event else { return nil }
        if !start {
            current = .suspended
            return []
        }
        current = .starting(.run)
        return [.startTransfer]
    }

    /// What a restart does to an unfinished task: a background one continues where it was; a
    /// default one completes `interrupted`, keeping resume data where it can; an ephemeral one is gone
    /// with the process. A task being cancelled completes cancelled, whatever the mode.
    private mutating func restored(_ state: TaskState, _ phase: TaskPhase, _ retryDueIn: Double?, _ event: Event) -> [Action]? {
        guard case .processRestarted(let mode, let retriesSentRequest) = event else { return nil }
        if state == .canceling { return complete(.cancelled, shown: .canceling, partial: .discardPartial) }
        switch mode {
        case .background where state == .suspended:
            current = .suspended
            return []
        case .background where !retriesSentRequest && (phase == .connecting || phase == .transferring):
            // Its request may have reached the origin; running it again would send it a second
            // time (RFC 9110 §9.2.2). Such a task is stored as connecting before it is sent.
            return complete(.interrupted, shown: state, partial: .discardPartial)
        case .background:
            // A task that was waiting to retry waits out the rest; any other starts (a start
            // finds `begin_at` again by itself).
            if phase == .retrying, let retryDueIn, retryDueIn > 0 {
                current = .retrying
                return [.scheduleStart(after: retryDueIn, phase: .retrying)]
            }
            current = .starting(.run)
            return [.startTransfer]
        case .default:
            return complete(.interrupted, shown: state, partial: .keepPartialForResume)
        case .ephemeral:
            current = .deleted
            return [.discardPartial]
        }
    }

    /// Suspended, or running with nothing started: nothing holds the output, so every request is
    /// carried out at once.
    private mutating func idle(_ event: Event) -> [Action]? {
        let running = current != .suspended
        switch event {
        case .resume:
            // Resuming a running task does nothing, as in URLSession.
            guard !running else { return [] }
            current = .starting(.run)
            return [.writeRecord(event: .resumed), .startTransfer]
        case .suspend:
            // Suspending a suspended task does nothing, as in URLSession.
            guard running else { return [] }
            current = .suspended
            return [.writeRecord(event: .suspended)]
        case .cancel(let resumeData):
            return complete(.cancelled, shown: state, partial: resumeData ? .keepPartialForResume : .discardPartial)
        case .processStopping:
            return complete(.interrupted, shown: state, partial: .keepPartialForResume)
        case .startDue:
            // Timers are not withdrawn: one that finds the task no longer waiting for it is stale.
            guard current == .scheduled || current == .retrying else { return [] }
            current = .starting(.run)
            return [.startTransfer]
        default:
            return nil
        }
    }

    /// A start is being prepared: requests are remembered and seen when the start reports.
    private mutating func starting(_ intent: Intent, _ event: Event) -> [Action]? {
        switch event {
        case .resume, .suspend, .cancel:
            guard let (changed, actions) = request(event, intent, transferRunning: false) else { return [] }
            current = .starting(changed)
            return actions
        case .startDue:
            // A start is under way already.
            return []
        case .beginLater(let delay):
            switch intent {
            case .run, .resume:
                current = .scheduled
                return [.scheduleStart(after: delay, phase: .scheduled)]
            case .suspend:
                current = .suspended
                return []
            case .cancel(let resumeData, let shown):
                return complete(.cancelled, shown: shown, partial: resumeData ? .keepPartialForResume : .discardPartial)
            }
        case .startFailed(let code):
            // The failure completes the task whatever was asked meanwhile: it decided first.
            return complete(code, shown: intent.shown, partial: nil)
        case .startPrepared:
            switch intent {
            case .run, .resume:
                current = .transferring(.waiting, .run)
                return [.submitTransfer]
            case .suspend:
                current = .suspended
                return [.keepPartial]
            case .cancel(let resumeData, let shown):
                return complete(.cancelled, shown: shown, partial: resumeData ? .keepPartialForResume : .discardPartial)
            }
        default:
            return nil
        }
    }

    /// The engine has the transfer. A suspend or cancel stops it; the attempt's end, whatever it
    /// is, settles the task as the intent says.
    private mutating func transferring(_ phase: TaskPhase, _ intent: Intent, _ event: Event) -> [Action]? {
        switch event {
        case .resume, .suspend, .cancel:
            guard let (changed, actions) = request(event, intent, transferRunning: true) else { return [] }
            current = .transferring(phase, changed)
            return actions
        case .startDue:
            return []
        case .transferStarted:
            guard phase == .waiting else { return nil }
            attempts += 1
            current = .transferring(.connecting, intent)
            return []
        case .responseHead, .progress:
            guard phase != .waiting else { return nil }
            current = .transferring(.transferring, intent)
            return []
        case .transferStopped(let reason):
            switch intent {
            case .cancel(let resumeData, let shown):
                // However the stop is reported, a cancel asked for it.
                return complete(.cancelled, shown: shown, partial: resumeData ? .keepPartialForResume : .discardPartial)
            case .run where reason != .shutdown, .suspend where reason == .cancelled, .resume where reason == .cancelled:
                // Nobody asked for this stop.
                return nil
            case .run, .suspend, .resume:
                current = .releasing(.waiting, intent)
                return [.releaseOutput]
            }
        case .transferFinished:
            return complete(nil, shown: intent.shown, partial: nil)
        case .transferFailed(let code, let decision):
            switch (decision, intent) {
            case (.retry, .cancel(let resumeData, let shown)):
                return complete(.cancelled, shown: shown, partial: resumeData ? .keepPartialForResume : .discardPartial)
            case (.retry(let delay), .suspend):
                current = .releasing(.retrying(after: delay), .suspend)
                return [.releaseOutput]
            case (.retry(let delay), _):
                // A resume that came while a suspend was stopping the transfer asked for it to run:
                // the retry does.
                current = .releasing(.retrying(after: delay), .run)
                return [.releaseOutput]
            case (.stop(let resumable), _):
                return complete(code, shown: intent.shown, partial: resumable ? .keepPartialForResume : .discardPartial)
            case (.deadline, _):
                return complete(.timedOut, shown: intent.shown, partial: .keepPartialForResume)
            }
        default:
            return nil
        }
    }

    /// An ended attempt's output is being let go; requests are remembered and carried out then.
    private mutating func releasing(_ next: Next, _ intent: Intent, _ event: Event) -> [Action]? {
        switch event {
        case .resume, .suspend, .cancel:
            guard let (changed, actions) = request(event, intent, transferRunning: false) else { return [] }
            current = .releasing(next, changed)
            return actions
        case .startDue:
            return []
        case .outputReleased:
            switch (intent, next) {
            case (.run, .waiting):
                current = .waiting
                return [.writeRecord(event: nil)]
            case (.run, .retrying(let delay)), (.resume, .retrying(let delay)):
                current = .retrying
                return [.writeRecord(event: nil), .scheduleStart(after: delay, phase: .retrying)]
            case (.resume, .waiting):
                current = .starting(.run)
                return [.writeRecord(event: nil), .startTransfer]
            case (.suspend, _):
                current = .suspended
                return [.writeRecord(event: nil)]
            case (.cancel(let resumeData, let shown), _):
                return complete(.cancelled, shown: shown, partial: resumeData ? .keepPartialForResume : .discardPartial)
            }
        default:
            return nil
        }
    }

    /// Completing, completed or forgotten: requests change nothing (cancelling or suspending a
    /// completed task does nothing, as in URLSession; a cancel's caller is answered by the completion).
    private mutating func ended(_ event: Event) -> [Action]? {
        switch (current, event) {
        case (.completing, .resume), (.completing, .suspend), (.completing, .cancel), (.completing, .startDue),
             (.completed, .resume), (.completed, .suspend), (.completed, .cancel), (.completed, .startDue),
             (.deleted, .startDue):
            return []
        case (.completing, .completionStored):
            current = .completed
            return [.notifyWaiters]
        case (.completed, .deleted):
            current = .deleted
            return []
        default:
            return nil
        }
    }

    /// A resume, suspend or cancel while the output is held: the changed intent and what to do
    /// now, or nil when it changes nothing (resuming what runs, suspending what is suspended, and
    /// anything after a cancel: the first cancel, with its wish for resume data, stands).
    private func request(_ event: Event, _ intent: Intent, transferRunning: Bool) -> (Intent, [Action])? {
        switch (event, intent) {
        case (_, .cancel), (.resume, .run), (.resume, .resume), (.suspend, .suspend):
            return nil
        case (.resume, .suspend):
            return (.resume, [.writeRecord(event: .resumed)])
        case (.suspend, .run):
            return (.suspend, transferRunning ? [.writeRecord(event: .suspended), .stopTransfer(.suspended)]
                                              : [.writeRecord(event: .suspended)])
        case (.suspend, .resume):
            // The stop asked for by the first suspend is still under way.
            return (.suspend, [.writeRecord(event: .suspended)])
        case (.cancel(let resumeData), _):
            guard transferRunning else { return (.cancel(resumeData: resumeData, shown: intent.shown), []) }
            return (.cancel(resumeData: resumeData, shown: .canceling), [.stopTransfer(.cancelled)])
        default:
            return nil
        }
    }

    /// Claims the completion: from here nothing starts the task again.
    private mutating func complete(_ code: TaskErrorCode?, shown: TaskState, partial: Action?) -> [Action] {
        current = .completing(shown: shown)
        return (partial.map { [$0] } ?? []) + [.complete(code)]
    }
}

extension TaskLifecycle.Intent {
    /// The state a task with this intent shows.
    var shown: TaskState {
        switch self {
        case .run, .resume: .running
        case .suspend: .suspended
        case .cancel(_, let shown): shown
        }
    }
}

extension TaskLifecycle: CustomStringConvertible {
    /// The state in full (what holds the output, what was asked), for logs.
    public var description: String { "\(current)" }
}
