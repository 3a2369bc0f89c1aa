import Digests
import Glibc
import Lifecycles
import Reactor
import TransferEngine
import Logging
import TransferModel

extension TaskRunner {
    /// A transfer attempt ended (on the file-work queue): what the attempt learned goes into the
    /// task; the retry policy judges a failure; the task's lifecycle decides what becomes of the
    /// output and the task — completed, retried, or left for a later attempt.
    func transferEnded(_ handle: TransferHandle, _ outcome: TransferOutcome, entry: TaskEntry, in session: SessionState) {
        // Cluster mode: an attempt that ended past the lease's deadline (its writes refused, or
        // its end reached only now, the process frozen meanwhile) leaves the task and its files
        // as they are — another replica may hold the session by now and write them. This replica
        // lets the session go, as its lease keeper does at the deadline.
        if outcome.stopReason == .fenced || engine.fence?.permitsNow == false { return tenure.release(session.identifier) }
        guard let outcome = uploadExchangeEnded(handle, outcome, entry: entry, in: session) else { return }
        let taken: (TaskOutput?, TaskRecord, SessionConfiguration)? = session.locked {
            guard entry.transfer === handle else { return nil }
            // Its lease was lost: the new holder decides what becomes of the task and its files.
            guard !session.released else { return nil }
            entry.transfer = nil
            defer { entry.output = nil }
            var record = entry.record
            // One stopped while it waited (or refused at admission) did nothing: the task keeps
            // what its previous attempt reported.
            if outcome.started {
                TaskRunner.absorb(outcome, into: &record)
                record.validator = TaskRunner.validator(after: outcome.response, previous: record.validator)
            }
            entry.record = record
            return (entry.output, record, session.configuration)
        }
        guard let (attemptOutput, record, configuration) = taken else { return }

        let event: TaskLifecycle.Event
        var ending: TaskError?
        switch outcome.stopReason {
        case .suspended?:
            event = .transferStopped(.suspended)
        case .shutdown? where session.mode == .default:
            // A default session's task does not outlive the process: it completes `interrupted`
            // now, with resume data, rather than at the next start — so what the store holds
            // after the shutdown is what a client will read, and its events go out with it.
            ending = TaskError(code: .interrupted, message: "transferd shut down while the task was running")
            event = .transferFailed(.interrupted, .stop(resumable: true))
        case .shutdown?, .fenced?:
            event = .transferStopped(.shutdown)
        case .cancelled?:
            event = .transferStopped(.cancelled)
        case .resourceTimeout?:
            ending = TaskError(code: .timedOut, message: "the task's resource timeout passed")
            event = .transferFailed(.timedOut, .deadline)
        case nil:
            // A resumable upload's next request asks for the offset: a HEAD, safe to send again.
            let policy = RetryPolicy(configuration: configuration, mode: session.mode,
                                     method: record.uploadState?.nextRequest.method ?? record.method)
            let deadline = record.createdAt.adding(seconds: configuration.timeoutResource)
            var random = SharedRandom()
            let now = clock.now(), jitter = Double.random(in: RetryPolicy.jitter, using: &random)
            if let failure = outcome.failure {
                let error = TaskError(failure)
                ending = error
                switch policy.decide(after: .failure(failure, requestSent: outcome.requestSent), attempts: record.metrics.attempts,
                                     deadline: deadline, now: now, jitter: jitter) {
                case .retry(let delay):
                    event = .transferFailed(error.code, .retry(after: delay))
                case .deadline:
                    ending = TaskError(code: .timedOut,
                                       message: "the task's resource timeout passed while retrying after: \(failure.message)",
                                       curlCode: failure.curlCode)
                    event = .transferFailed(error.code, .deadline)
                case .stop:
                    if failure.isTransient, policy.withholdsRetry(requestSent: outcome.requestSent) {
                        ending = TaskError(code: error.code, message: "\(failure.message) (not tried again: the origin may have seen "
                                           + "the \(record.method) request, and retry.methods does not list \(record.method))",
                                           curlCode: failure.curlCode)
                    }
                    // A download the network cut short leaves resume data (not one that failed on
                    // its own side, such as a full disk).
                    event = .transferFailed(error.code, .stop(resumable: failure.isTransient))
                }
            } else if let status = outcome.response?.status,
                      case .retry(let delay) = policy.decide(after: .status(status, retryAfter: outcome.response.flatMap(RetryAfter.seconds)),
                                                             attempts: record.metrics.attempts, deadline: deadline, now: now, jitter: jitter)
            {
                // A status the session retries: what came with it is not the body wanted.
                attemptOutput?.truncate()
                ending = TaskError(code: .badServerResponse, message: "HTTP \(status)")
                event = .transferFailed(.badServerResponse, .retry(after: delay))
            } else if let error = TaskRunner.httpError(outcome.response, configuration: configuration) {
                ending = error
                event = .transferFailed(.httpError, .stop(resumable: false))
            } else {
                event = .transferFinished
            }
        }
        var output = attemptOutput
        if ending?.code == .httpError, case .transferFailed = event {
            output = files.keepErrorBody(output, outcome: outcome, entry: entry, in: session)
        }
        let actions = session.locked { () -> [TaskLifecycle.Action] in
            // A task that waits now (to retry, suspended, or for the next start) moves nothing:
            // its rate is 0, not the attempt's average, which only a completed task keeps.
            if TaskRunner.leavesTaskWaiting(event) { entry.record.progress.bytesPerSecond = 0 }
            // A task waiting to retry after a failure shows that failure (README, "Retries": a
            // failure is never hidden behind running) until its next attempt starts.
            if case .transferFailed(_, .retry) = event, outcome.failure != nil { entry.record.error = ending }
            return step(entry, event)
        }
        if actions == [.complete(nil)] { return finishSuccessfully(outcome, output: output, entry: entry, in: session) }
        if case .transferFailed(_, .retry(let delay)) = event, actions.contains(.releaseOutput), let ending {
            logger.info("retrying", metadata: TaskRunner.logMetadata(of: record).merging([
                "after_s": .stringConvertible(delay), "reason": .string(ending.message),
                "attempts": .stringConvertible(record.metrics.attempts)]) { $1 })
        }
        perform(actions, of: entry, in: session, output: output, ending: ending)
    }

    /// Whether an attempt's end leaves the task unfinished: retried later, suspended, or stopped
    /// for a shutdown it outlives.
    static func leavesTaskWaiting(_ event: TaskLifecycle.Event) -> Bool {
        switch event {
        case .transferFailed(_, .retry), .transferStopped(.suspended), .transferStopped(.shutdown): true
        default: false
        }
    }

    /// `configuration.fail_on_http_error`: the error the attempt's final response makes of the
    /// task — an origin status ≥ 400 that no retry will change ends it with `http_error`.
    static func httpError(_ response: ResponseHead?, configuration: SessionConfiguration) -> TaskError? {
        guard configuration.failOnHTTPError, let status = response?.status, status >= 400 else { return nil }
        return TaskError(code: .httpError, message: "the origin answered HTTP \(status)", status: status)
    }
}
