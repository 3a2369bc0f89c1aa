import Digests
import Glibc
import JSON
import Lifecycles
import Reactor
import TransferEngine
import TransferModel

extension TaskRunner {
    /// Prepares the start the task's lifecycle claimed its output for (`startTransfer`): builds the
    /// transfer from the task and its session's configuration and hands it to the engine — unless
    /// the lifecycle, told the start is ready, says otherwise (a suspend or cancel came meanwhile).
    /// Its files are opened only once the engine admits it (`TaskFilePreparer`): a task queued
    /// behind the session's limits holds no descriptor.
    func startTransfer(_ entry: TaskEntry, in session: SessionState) {
        let (record, configuration) = session.locked { (entry.record, session.configuration) }
        let now = clock.now()
        let remaining = record.createdAt.adding(seconds: configuration.timeoutResource).seconds - now.seconds
        guard remaining > 0 else {
            return startFailed(entry, in: session, TaskError(code: .timedOut, message: "the task's resource timeout passed"))
        }
        // Not before `begin_at`: until then nothing is handed to the engine — a task scheduled
        // for tomorrow costs a timer, not a place in the queue (nor start-up time).
        if let beginAt = record.beginAt, beginAt > now {
            let actions = session.locked {
                let actions = step(entry, .beginLater(after: beginAt.seconds - now.seconds))
                entry.record.phase = entry.lifecycle.phase
                return actions
            }
            return perform(actions, of: entry, in: session)
        }
        let body: TaskBody
        do {
            body = try files.planBody(for: record, session: session)
        } catch {
            return startFailed(entry, in: session, error)
        }
        if let resume = record.resumeFrom { files.adoptPartial(resume, for: record, session: session) }
        let spec = transferSpec(record, configuration: configuration, body: body, remaining: remaining, entry: entry, in: session)
        let observer = TaskTransferObserver(runner: self, session: session, entry: entry)
        guard TaskRunner.recordsSendingFirst(record, configuration: configuration, mode: session.mode) else {
            return submit(spec, observer: observer, of: entry, in: session)
        }
        // Stored before it goes out: a restart then knows the origin may have seen it, and does
        // not send it again (`TaskLifecycle`, `.processRestarted`). One commit per such attempt,
        // grouped with the others of its moment.
        var marked = session.locked { entry.record }
        marked.phase = .connecting
        journal.persist(session, [.updateTaskKeepingState(marked, document: marked.storageDocument())]) { [self, spec] result in
            guard case .failure = result else { return submit(spec, observer: observer, of: entry, in: session) }
            startFailed(entry, in: session, TaskError(code: .cannotWriteToFile, message:
                "not sent: the store could not record that the \(record.method) was about to go out"))
        }
    }

    /// The transfer of the task's next attempt (or, for a resumable upload, of its next exchange
    /// with the upload resource: `TaskRunner+UploadResumption`).
    func transferSpec(_ record: TaskRecord, configuration: SessionConfiguration, body: TaskBody, remaining: Double,
                      entry: TaskEntry, in session: SessionState) -> TransferSpec
    {
        var spec = TransferSpec(label: "\(session.identifier)/\(record.id)", session: session.identifier, url: record.url)
        spec.method = record.method
        var taskHeaders = record.headers
        if let contentType = body.contentType {
            taskHeaders.removeAll { $0.name.lowercased() == "content-type" }
            taskHeaders.append(Header(name: "Content-Type", value: contentType))
        }
        spec.headers = TaskRunner.mergedHeaders(session: configuration.headers, task: taskHeaders)
        if let trace = record.traceparent.flatMap(TraceParent.init) {
            // The task's trace wins over a traceparent among its headers: one trace per task.
            spec.headers.removeAll { $0.0.lowercased() == "traceparent" }
            spec.headers.append(("traceparent", trace.child()))
        }
        spec.preparer = TaskFilePreparer(files: files, session: session, entry: entry, body: body)
        spec.idleTimeout = configuration.timeoutRequest
        spec.totalTimeout = remaining
        spec.followRedirects = configuration.redirects.follow
        spec.maxRedirects = configuration.redirects.max
        spec.priority = record.priority
        spec.sequence = UInt64(record.sequence)
        spec.digests = record.kind == .download ? record.computedDigests : []
        spec.verifyOriginDigests = record.kind == .download && configuration.verifyOriginDigests
        spec.checkpointDigests = record.isResumable
        // A durable session's download is named once a crash would lose a second or a MiB of it,
        // so the next start continues it (background) or offers it as resume data (default).
        spec.reportsPartialWorth = record.isResumable && session.mode.isDurable
        spec.maxBodyBytes = record.kind == .download ? record.maxBytes : limits.maxDataBodyBytes
        spec.tally = metrics.tally(forSession: session.identifier)
        // curl's own re-send on a fresh connection is a retry the origin may see: only for a
        // method the session retries, and within `max_attempts` (this attempt is one).
        spec.resendLimit = configuration.retry.retries(record.method)
            ? max(0, configuration.retry.maxAttempts - record.metrics.attempts - 1) : 0
        return resumableExchange(of: record, body: body, spec: spec, entry: entry, in: session)
    }

    /// Whether an attempt is recorded as sent before it is: a background session's task (the mode
    /// that runs a task again after a restart) whose method is not tried again once the origin may
    /// have seen it (`retry.methods`).
    static func recordsSendingFirst(_ record: TaskRecord, configuration: SessionConfiguration, mode: SessionMode) -> Bool {
        mode == .background && !configuration.retry.retries(record.method)
    }

    /// Hands the prepared transfer to the engine — unless the lifecycle, told the start is ready,
    /// says otherwise (a suspend or cancel came meanwhile).
    private func submit(_ spec: TransferSpec, observer: TaskTransferObserver, of entry: TaskEntry, in session: SessionState) {
        let declined: [TaskLifecycle.Action]? = session.locked {
            // A suspend or cancel that came meanwhile was left to this moment: nothing ran to stop.
            let actions = step(entry, .startPrepared)
            guard actions == [.submitTransfer] else { return actions }
            entry.record.phase = entry.lifecycle.phase
            entry.record.nextAttemptAt = nil
            entry.record.error = nil
            // Its preparer opens the file on admission; until the attempt's end (`transferEnded`)
            // the file is the transfer's.
            entry.transfer = engine.submit(spec, observer: observer)
            return nil
        }
        if let declined { perform(declined, of: entry, in: session) }
    }

    /// A start that could not be made completes the task with its error, whatever was asked meanwhile.
    private func startFailed(_ entry: TaskEntry, in session: SessionState, _ error: TaskError) {
        perform(session.locked { step(entry, .startFailed(error.code)) }, of: entry, in: session, ending: error)
    }

    /// Session headers first; a task header of the same name replaces the session's.
    static func mergedHeaders(session: [Header], task: [Header]) -> [(String, String)] {
        let overridden = Set(task.map { $0.name.lowercased() })
        return session.filter { !overridden.contains($0.name.lowercased()) }.map { ($0.name, $0.value) }
            + task.map { ($0.name, $0.value) }
    }
}
