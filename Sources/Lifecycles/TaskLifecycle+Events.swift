import TransferVocabulary

/// What a task's lifecycle is told and what it answers.
extension TaskLifecycle {
    /// Suspended, or running with nothing started (queued on a timer, or stopped by a
    /// shutdown): nothing holds its output, and only a request or a timer moves it.
    public var isAtRest: Bool {
        switch current {
        case .suspended, .waiting, .scheduled, .retrying: true
        default: false
        }
    }

    public enum Event: Sendable, Equatable {
        /// The task was stored; `start` false leaves it suspended, like a new URLSessionTask.
        case created(start: Bool)
        /// The process started again and found the task as `init(restoring:…)` described it.
        /// `retriesSentRequest`: whether the session tries the task's method again once the
        /// origin may have seen it (`retry.methods`); a background task that was connecting or
        /// transferring with one it does not is not sent a second time.
        case processRestarted(mode: SessionMode, retriesSentRequest: Bool = true)
        /// The process is shutting down and the task, of a `default` session, is at rest
        /// (`isAtRest`): it completes `interrupted` now, as the next start would have completed it.
        case processStopping
        case resume
        case suspend
        case cancel(produceResumeData: Bool)
        /// A start scheduled by `scheduleStart` is due (`begin_at` reached, or the retry's wait over).
        case startDue
        /// The start found `begin_at` still ahead: it begins after this many seconds.
        case beginLater(after: Double)
        /// The start could not be made (the resource deadline passed, a file could not be opened).
        case startFailed(TaskErrorCode)
        /// The start has its body and output open: the transfer may go to the engine.
        case startPrepared
        /// The engine began an attempt (it is connecting).
        case transferStarted
        case responseHead
        case progress
        /// The engine stopped the transfer because it was asked to.
        case transferStopped(StopReason)
        /// The attempt ended with a response the task completes with.
        case transferFinished
        /// The attempt failed (or got a status the session retries); the retry policy decided.
        case transferFailed(TaskErrorCode, RetryDecision)
        /// The ended attempt's output is closed, its file kept for the next attempt.
        case outputReleased
        /// The completion (record and events) is committed.
        case completionStored
        /// The completed task was forgotten (`DELETE`).
        case deleted
    }

    public enum StopReason: String, Sendable, Equatable, CaseIterable {
        case suspended, shutdown, cancelled
    }

    public enum RetryDecision: Sendable, Equatable {
        case retry(after: Double)
        /// No more attempts; `resumable` when the network cut a download short, so its partial
        /// file becomes resume data.
        case stop(resumable: Bool)
        /// A retry could not start before the task's resource deadline: the task times out.
        case deadline
    }

    /// Events a record write announces.
    public enum RecordEvent: String, Sendable, Equatable {
        case resumed = "task.resumed", suspended = "task.suspended"
    }

    public enum Action: Sendable, Equatable {
        /// Store the task's state and phase (and what the attempt learned), with the event if any.
        case writeRecord(event: RecordEvent?)
        /// Prepare a start: open the body and the output; report `startPrepared`, `beginLater` or
        /// `startFailed`.
        case startTransfer
        /// Hand the prepared transfer to the engine.
        case submitTransfer
        case stopTransfer(StopReason)
        /// Report `startDue` after this many seconds.
        case scheduleStart(after: Double, phase: TaskPhase)
        /// Close the output of a start that did not go ahead, keeping its file for the next attempt.
        case keepPartial
        /// Close an ended attempt's output, keeping its file for the next attempt; report
        /// `outputReleased`.
        case releaseOutput
        /// The partial file becomes resume data, carried by the completion's error.
        case keepPartialForResume
        case discardPartial
        /// Store the completion (commit a successful download's file first).
        case complete(TaskErrorCode?)
        /// Answer those waiting for the completion.
        case notifyWaiters
    }

    public typealias Transition = LifecycleTransition<TaskLifecycle>
}
