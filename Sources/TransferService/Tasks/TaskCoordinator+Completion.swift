import Glibc
import HTTPServer
import Store
import TransferEngine

extension TaskCoordinator {
    /// A transfer attempt ended (on the file-work queue): settle its output file, then the task.
    func transferEnded(_ handle: TransferHandle, _ outcome: TransferOutcome, entry: TaskEntry, in session: SessionState) {
        let taken: (TaskOutput?, TaskRecord, TaskEntry.AfterStop)? = session.locked {
            guard entry.transfer === handle else { return nil }
            entry.transfer = nil
            defer { entry.output = nil; entry.afterStop = .nothing }
            var record = entry.record
            TaskCoordinator.absorb(outcome, into: &record)
            entry.record = record
            return (entry.output, record, entry.afterStop)
        }
        guard let (output, record, afterStop) = taken else { return }

        switch outcome.stopReason {
        case .suspended?, .shutdown?:
            // The partial file stays for the next attempt; the validator says whether it may continue.
            output?.keep()
            var kept = record
            kept.validator = TaskCoordinator.validator(outcome.response) ?? record.validator
            kept.phase = .waiting
            commit(kept, of: entry, in: session, then: { [self] in
                if afterStop == .resume { startTransfer(entry, in: session) }
            })
        case .cancelled?:
            output?.discard()
            complete(entry, in: session, error: TaskError(code: .cancelled, message: "the task was cancelled"))
        case .resourceTimeout?:
            output?.discard()
            complete(entry, in: session, error: TaskError(code: .timedOut, message: "the task's resource timeout passed"))
        case nil:
            if let failure = outcome.failure {
                output?.discard()
                complete(entry, in: session, error: TaskError(failure))
            } else {
                finishSuccessfully(outcome, output: output, entry: entry, in: session)
            }
        }
    }

    private func finishSuccessfully(_ outcome: TransferOutcome, output: TaskOutput?, entry: TaskEntry, in session: SessionState) {
        var record = session.locked { entry.record }
        guard let output else {
            // An ephemeral data task: the body stays in memory, for `…/body`.
            session.locked { entry.memoryBody = outcome.body ?? [] }
            return complete(entry, in: session, record: record)
        }
        do throws(TaskFileError) {
            if record.kind == .download {
                guard let sha256 = outcome.sha256 else {
                    throw TaskFileError(code: EIO, what: "cannot read back the downloaded file to hash it")
                }
                if let expected = record.checksumSHA256, expected != sha256 {
                    output.discard()
                    return complete(entry, in: session, error: TaskError(code: .checksumMismatch,
                        message: "the downloaded file's sha256 is \(sha256), not the expected \(expected)"))
                }
                try output.commit()
                record.result = DownloadResult(location: output.finalPath, size: outcome.bytesReceived, sha256: sha256)
            } else {
                try output.commit()
                record.bodyLocation = output.finalPath
            }
        } catch {
            output.discard()
            return complete(entry, in: session, error: TaskError(code: .cannotWriteToFile, message: error.message))
        }
        complete(entry, in: session, record: record)
    }

    /// Completes a task with an error (it never reached the origin, or the attempt failed).
    func complete(_ entry: TaskEntry, in session: SessionState, error: TaskError) {
        var record = session.locked { entry.record }
        record.error = error
        complete(entry, in: session, record: record)
    }

    /// Stores the completed record, then publishes it (waking long-polls).
    func complete(_ entry: TaskEntry, in session: SessionState, record: TaskRecord) {
        var done = record
        done.state = .completed
        done.phase = .finished
        done.completedAt = Timestamp.now()
        done.nextAttemptAt = nil
        if done.error == nil && done.progress.bytesExpectedToReceive < 0 {
            done.progress.bytesExpectedToReceive = done.progress.bytesReceived
        }
        // A spooled body is needed no more once its task completed.
        let completed = done
        let ownedBlob = TaskCoordinator.ownedBlob(of: completed)
        let lastBusy = session.locked {
            (entry.record.state == .running || entry.record.state == .canceling) && session.busyCount == 1
        }
        commit(completed, of: entry, in: session, events: { api in
            TaskCoordinator.completionEvents(completed, api: api, lastBusy: lastBusy)
        }, also: ownedBlob.map { id in { try BlobStore.deleteRow(id, $0) } }, then: { [self] in
            removeOwnedBlobFile(of: completed)
        })
    }

    /// `task.finished_downloading` (a download that succeeded), `task.completed` (with the task),
    /// and `session.all_tasks_finished` when this was the last task keeping the session busy.
    private static func completionEvents(_ record: TaskRecord, api: [UInt8], lastBusy: Bool) -> [EventDraft] {
        var events: [EventDraft] = []
        if let result = record.result, record.error == nil {
            var json = JSONWriter()
            json.beginObject()
            json.key("location"); json.string(result.location)
            json.key("size"); json.int(result.size)
            json.key("sha256"); json.string(result.sha256)
            json.endObject()
            events.append(EventDraft(.taskFinishedDownloading, task: record.id, data: json.bytes))
        }
        events.append(EventDraft(.taskCompleted, task: record.id, data: api))
        if lastBusy { events.append(EventDraft(.sessionAllTasksFinished, task: nil)) }
        return events
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
    static func validator(_ response: ResponseHead?) -> String? {
        guard let response else { return nil }
        if let etag = response.header("etag"), !etag.hasPrefix("W/") { return etag }
        return response.header("last-modified")
    }
}

extension TaskError {
    init(_ failure: TransferFailure) {
        self.init(code: TaskErrorCode(rawValue: failure.code.rawValue) ?? .networkConnectionLost,
                  message: failure.message, curlCode: failure.curlCode, resumeData: nil)
    }
}
