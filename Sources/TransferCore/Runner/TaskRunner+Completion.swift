import Digests
import Glibc
import Lifecycles
import Logging
import TransferEngine
import TransferModel
import TransferVocabulary

extension TaskRunner {
    func finishSuccessfully(_ outcome: TransferOutcome, output: TaskOutput?, entry: TaskEntry, in session: SessionState) {
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
        files.commitOutput(output, durable: session.mode.isDurable) { [self] error in
            guard let error else { return complete(entry, in: session, record: finished) }
            output.discard()
            complete(entry, in: session, error: TaskError(code: .cannotWriteToFile, message: error.message))
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
        done.completedAt = clock.now()
        done.nextAttemptAt = nil
        done.digestCheckpoint = nil
        if done.error == nil && done.progress.bytesExpectedToReceive < 0 {
            done.progress.bytesExpectedToReceive = done.progress.bytesReceived
        }
        // A failure gets a line of its own, for an operator who greps the log rather than the
        // API; a cancellation is what a client asked for, not a failure.
        if let error = done.error, error.code != .cancelled {
            var metadata = TaskRunner.logMetadata(of: done)
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
        let ownedBlob = TaskFiles.ownedBlob(of: completed)
        // Its completion, numbered with its events, ends the session's busy period when the task
        // counts as busy: counted in busyTasksEnding from then until it is published.
        let endsBusy = session.locked { entry.record.state == .running || entry.record.state == .canceling }
        // Its file goes once the row has, on the file pool (not on the store's completion queue).
        var removeBlob: (@Sendable () -> Void)?
        if ownedBlob != nil {
            removeBlob = { @Sendable [files] in files.fileWork.async { files.removeOwnedBlobFile(of: completed) } }
        }
        commit(completed, of: entry, in: session, events: { api in
            TaskRunner.completionEvents(completed, api: api, endsBusy: endsBusy)
        }, endsBusy: endsBusy, also: ownedBlob.map { [.deleteBlob($0)] } ?? [], then: removeBlob)
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
            // Mostly the head already taken in on its arrival (`transferReceivedResponse`).
            if record.currentURL != response.url || record.response?.hasFields(of: response) != true {
                record.response = TaskResponse(response)
            }
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
