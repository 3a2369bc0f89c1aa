import Digests
import Glibc
import Lifecycles
import Reactor
import TransferEngine
import Logging
import TransferModel
import TransferVocabulary

extension TaskCoordinator {
    /// A transfer attempt ended (on the file-work queue): what the attempt learned goes into the
    /// task; the retry policy judges a failure; the task's lifecycle decides what becomes of the
    /// output and the task — completed, retried, or left for a later attempt.
    func transferEnded(_ handle: TransferHandle, _ outcome: TransferOutcome, entry: TaskEntry, in session: SessionState) {
        // Cluster mode: an attempt that ended past the lease's deadline (its writes refused, or
        // its end reached only now, the process frozen meanwhile) leaves the task and its files
        // as they are — another replica may hold the session by now and write them. This replica
        // lets the session go, as its lease keeper does at the deadline.
        if outcome.stopReason == .fenced || engine.fence?.permitsNow == false { return release(session.identifier) }
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
                TaskCoordinator.absorb(outcome, into: &record)
                record.validator = TaskCoordinator.validator(after: outcome.response, previous: record.validator)
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
            let policy = RetryPolicy(configuration: configuration, mode: session.mode, method: record.method)
            let deadline = record.createdAt.adding(seconds: configuration.timeoutResource)
            let now = Timestamp.now(), jitter = Double.random(in: RetryPolicy.jitter)
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
            } else if let error = TaskCoordinator.httpError(outcome.response, configuration: configuration) {
                ending = error
                event = .transferFailed(.httpError, .stop(resumable: false))
            } else {
                event = .transferFinished
            }
        }
        var output = attemptOutput
        if ending?.code == .httpError, case .transferFailed = event {
            output = keepErrorBody(output, outcome: outcome, entry: entry, in: session)
        }
        let actions = session.locked { () -> [TaskLifecycle.Action] in
            // A task that waits now (to retry, suspended, or for the next start) moves nothing:
            // its rate is 0, not the attempt's average, which only a completed task keeps.
            if TaskCoordinator.leavesTaskWaiting(event) { entry.record.progress.bytesPerSecond = 0 }
            // A task waiting to retry after a failure shows that failure (README, "Retries": a
            // failure is never hidden behind running) until its next attempt starts.
            if case .transferFailed(_, .retry) = event, outcome.failure != nil { entry.record.error = ending }
            return step(entry, event)
        }
        if actions == [.complete(nil)] { return finishSuccessfully(outcome, output: output, entry: entry, in: session) }
        if case .transferFailed(_, .retry(let delay)) = event, actions.contains(.releaseOutput), let ending {
            logger.info("retrying", metadata: TaskCoordinator.logMetadata(of: record).merging([
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

    /// Starts the task once `delay` has passed, unless meanwhile it was suspended, cancelled or
    /// started otherwise (its lifecycle tells: a timer is never withdrawn).
    func startLater(_ entry: TaskEntry, in session: SessionState, after delay: Double) {
        clock.execute { [self] in
            clock.scheduleTimer(at: MonotonicClock.after(seconds: delay)) { [self] in
                perform(session.locked { step(entry, .startDue) }, of: entry, in: session)
            }
        }
    }

    /// Keeps a download's partial file and returns resume data for it, when there is something to
    /// resume: bytes on disk and a validator to send with `If-Range`.
    func keepForResume(_ record: TaskRecord, output: TaskOutput?) -> String? {
        guard record.isResumable, let output, let validator = record.validator else { return nil }
        let offset = output.existingSize
        guard offset > 0, let partial = output.keepForResume(as: TaskCoordinator.resumeName(for: record)) else { return nil }
        let data = ResumeData(url: record.currentURL ?? record.url, validator: validator, offset: offset,
                              partial: partial, destination: record.destination, origin: "\(record.session)/\(record.id)")
        return data.token(key: resumeKey)
    }

    private func finishSuccessfully(_ outcome: TransferOutcome, output: TaskOutput?, entry: TaskEntry, in session: SessionState) {
        var record = session.locked { entry.record }
        guard let output else {
            // An ephemeral data task: the body stays in memory, for `…/body`.
            session.locked { entry.memoryBody = outcome.body ?? [] }
            return complete(entry, in: session, record: record)
        }
        if record.kind == .download {
            if let offset = outcome.digestsContinuedFrom {
                logger.info("digests continued from a checkpoint", metadata: ["task": .string("\(session.identifier)/\(record.id)"),
                                                                              "offset": .stringConvertible(offset)])
            }
            let computed = outcome.digests ?? [:]
            let declared = outcome.declaredDigests
            guard record.computedDigests.allSatisfy({ computed[$0] != nil }), declared.allSatisfy({ computed[$0.algorithm] != nil }) else {
                output.discard()
                let error = TaskFileError(code: EIO, what: "cannot read back the downloaded file to hash it")
                return complete(entry, in: session, error: TaskError(code: .cannotWriteToFile, message: error.message))
            }
            if let expected = record.checksum, let actual = computed[expected.algorithm], actual != expected.hex {
                output.discard()
                return complete(entry, in: session, error: TaskError(code: .checksumMismatch,
                    message: "the downloaded file's \(expected.algorithm.rawValue) is \(actual), not the expected \(expected.hex)"))
            }
            // What the origin declared is checked as a checksum is: the file must match it.
            if let wrong = declared.first(where: { computed[$0.algorithm] != $0.hex }), let actual = computed[wrong.algorithm] {
                output.discard()
                return complete(entry, in: session, error: TaskError(code: .checksumMismatch,
                    message: "the downloaded file's \(wrong.algorithm.rawValue) is \(actual), not the \(wrong.hex) the origin declared (\(wrong.source))"))
            }
            record.result = DownloadResult(location: output.finalPath, size: outcome.bytesReceived,
                                           digests: record.digests.compactMap { a in computed[a].map { (a, $0) } },
                                           verified: declared.map(\.source))
        } else {
            record.bodyLocation = output.finalPath
        }
        let finished = record
        commitOutput(output, durable: session.mode.isDurable) { [self] error in
            guard let error else { return complete(entry, in: session, record: finished) }
            output.discard()
            complete(entry, in: session, error: TaskError(code: .cannotWriteToFile, message: error.message))
        }
    }

    /// Gives a finished file its final name. A durable session's file is made durable first (with
    /// the other files finishing meanwhile: `OutputCommitter`); an ephemeral session's is only
    /// named, as `curl -o` leaves a file: nothing of such a session is meant to survive a crash.
    private func commitOutput(_ output: TaskOutput, durable: Bool, then done: @escaping @Sendable (TaskFileError?) -> Void) {
        if durable { return outputCommitter.commit(output, then: done) }
        do {
            try output.publish()
            output.closeDirectory()
            done(nil)
        } catch {
            done(error)
        }
    }

    /// Completes a task with an error (it never reached the origin, or the attempt failed).
    func complete(_ entry: TaskEntry, in session: SessionState, error: TaskError) {
        var record = session.locked { entry.record }
        record.error = error
        complete(entry, in: session, record: record)
    }

    /// Stores the completed record, then publishes it (waking long-polls). Called once per task:
    /// its lifecycle claimed the completion.
    func complete(_ entry: TaskEntry, in session: SessionState, record: TaskRecord) {
        var done = record
        done.state = .completed
        done.phase = .finished
        done.completedAt = Timestamp.now()
        done.nextAttemptAt = nil
        done.digestCheckpoint = nil
        if done.error == nil && done.progress.bytesExpectedToReceive < 0 {
            done.progress.bytesExpectedToReceive = done.progress.bytesReceived
        }
        // A failure gets a line of its own, for an operator who greps the log rather than the
        // API; a cancellation is what a client asked for, not a failure.
        if let error = done.error, error.code != .cancelled {
            var metadata = TaskCoordinator.logMetadata(of: done)
            metadata["code"] = .string(error.code.rawValue)
            metadata["error"] = .string(error.message)
            metadata["attempts"] = .stringConvertible(done.metrics.attempts)
            if let status = error.status { metadata["status"] = .stringConvertible(status) }
            if let curl = error.curlCode { metadata["curl_code"] = .stringConvertible(curl) }
            logger.warning("task failed", metadata: metadata)
        }
        metrics.taskCompleted(done, session: session.identifier)
        // A spooled body is needed no more once its task completed.
        let completed = done
        let ownedBlob = TaskCoordinator.ownedBlob(of: completed)
        // Its completion, numbered with its events, ends the session's busy period when the task
        // counts as busy: counted in busyTasksEnding from then until it is published.
        let endsBusy = session.locked { entry.record.state == .running || entry.record.state == .canceling }
        commit(completed, of: entry, in: session, events: { api in
            TaskCoordinator.completionEvents(completed, api: api, endsBusy: endsBusy)
        }, endsBusy: endsBusy, also: ownedBlob.map { [.deleteBlob($0)] } ?? [], then: { [self] in
            removeOwnedBlobFile(of: completed)
        })
    }

    /// `task.finished_downloading` (a download that succeeded) and `task.completed` (with the
    /// task), which `session.all_tasks_finished` follows when it leaves the session idle.
    private static func completionEvents(_ record: TaskRecord, api: [UInt8], endsBusy: Bool) -> [EventDraft] {
        var events: [EventDraft] = []
        if let result = record.result, record.error == nil {
            events.append(EventDraft(.taskFinishedDownloading, task: record.id, data: result.jsonBytes()))
        }
        events.append(EventDraft(.taskCompleted, task: record.id, data: api, endsBusyTask: endsBusy))
        return events
    }

    /// What every log line about a task carries: its session, its id, and its trace when the
    /// creating request had one.
    static func logMetadata(of record: TaskRecord) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["session": .string(record.session), "task": .string(record.id)]
        if let traceparent = record.traceparent {
            metadata["traceparent"] = .string(traceparent)
            metadata["trace_id"] = .string(String(traceparent.dropFirst(3).prefix(32)))
        }
        return metadata
    }

    /// Folds what the attempt learned into the task: response, progress, metrics.
    static func absorb(_ outcome: TransferOutcome, into record: inout TaskRecord) {
        if let response = outcome.response {
            record.response = TaskResponse(response)
            record.currentURL = response.url
            if let length = response.expectedContentLength {
                record.progress.bytesExpectedToReceive = length + (outcome.resumedAtOffset ?? 0)
            }
        }
        // Each time the transport sent the request again by itself, the origin may have seen it.
        record.metrics.attempts += outcome.resends
        record.progress.bytesReceived = outcome.bytesReceived
        record.progress.bytesSent = outcome.bytesSent
        if outcome.bytesExpectedToSend > 0 { record.progress.bytesExpectedToSend = outcome.bytesExpectedToSend }
        let m = outcome.metrics
        record.metrics.redirectCount = m.redirectCount
        record.metrics.remoteAddress = m.remoteAddress ?? record.metrics.remoteAddress
        record.metrics.httpProtocol = m.httpVersion ?? record.metrics.httpProtocol
        record.metrics.reusedConnection = m.reusedConnection
        record.metrics.dnsMs = m.dnsMs
        record.metrics.connectMs = m.connectMs
        record.metrics.tlsMs = m.tlsMs
        record.metrics.firstByteMs = m.firstByteMs
        record.metrics.totalMs = m.totalMs
        if record.progress.bytesPerSecond == 0, m.totalMs > 0 {
            record.progress.bytesPerSecond = Double(outcome.bytesReceived + outcome.bytesSent) / (m.totalMs / 1000)
        }
    }

    /// A strong ETag, else Last-Modified: what `If-Range` may carry (RFC 9110 §13.1.5).
    static func validator(_ response: ResponseHead) -> String? {
        if let etag = response.header("etag"), !etag.hasPrefix("W/") { return etag }
        return response.header("last-modified")
    }

    /// The validator of the bytes in a task's file once `response` arrived: a 206 continued the
    /// file the previous validator named (and may repeat it or not); any other response replaced
    /// the content, so only its own validator, if any, describes the file. No response: no change.
    static func validator(after response: ResponseHead?, previous: String?) -> String? {
        guard let response else { return previous }
        return response.status == 206 ? validator(response) ?? previous : validator(response)
    }
}

extension TaskError {
    init(_ failure: TransferFailure) {
        self.init(code: failure.code,
                  message: failure.message, curlCode: failure.curlCode, resumeData: nil)
    }
}
