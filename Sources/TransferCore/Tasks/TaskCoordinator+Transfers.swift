import Digests
import Glibc
import JSON
import Lifecycles
import Reactor
import TransferEngine
import TransferModel

extension TaskCoordinator {
    /// Prepares the start the task's lifecycle claimed its output for (`startTransfer`): builds the
    /// transfer from the task and its session's configuration and hands it to the engine — unless
    /// the lifecycle, told the start is ready, says otherwise (a suspend or cancel came meanwhile).
    /// Its files are opened only once the engine admits it (`TaskFilePreparer`): a task queued
    /// behind the session's limits holds no descriptor.
    func startTransfer(_ entry: TaskEntry, in session: SessionState) {
        let (record, configuration) = session.locked { (entry.record, session.configuration) }
        let now = Timestamp.now()
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
            body = try planBody(for: record, session: session)
        } catch {
            return startFailed(entry, in: session, error)
        }
        if let resume = record.resumeFrom { adoptPartial(resume, for: record, session: session) }
        var spec = TransferSpec(label: "\(session.identifier)/\(record.id)", session: session.identifier, url: record.url)
        spec.method = record.method
        var taskHeaders = record.headers
        if let contentType = body.contentType {
            taskHeaders.removeAll { $0.name.lowercased() == "content-type" }
            taskHeaders.append(Header(name: "Content-Type", value: contentType))
        }
        spec.headers = TaskCoordinator.mergedHeaders(session: configuration.headers, task: taskHeaders)
        if let trace = record.traceparent.flatMap(TraceParent.init) {
            // The task's trace wins over a traceparent among its headers: one trace per task.
            spec.headers.removeAll { $0.0.lowercased() == "traceparent" }
            spec.headers.append(("traceparent", trace.child()))
        }
        spec.preparer = TaskFilePreparer(coordinator: self, session: session, entry: entry, body: body)
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

        let observer = TaskTransferObserver(coordinator: self, session: session, entry: entry)
        guard TaskCoordinator.recordsSendingFirst(record, configuration: configuration, mode: session.mode) else {
            return submit(spec, observer: observer, of: entry, in: session)
        }
        // Stored before it goes out: a restart then knows the origin may have seen it, and does
        // not send it again (`TaskLifecycle`, `.processRestarted`). One commit per such attempt,
        // grouped with the others of its moment.
        var marked = session.locked { entry.record }
        marked.phase = .connecting
        persist(session, [.updateTaskKeepingState(marked, document: marked.storageDocument())]) { [self, spec] result in
            guard case .failure = result else { return submit(spec, observer: observer, of: entry, in: session) }
            startFailed(entry, in: session, TaskError(code: .cannotWriteToFile, message:
                "not sent: the store could not record that the \(record.method) was about to go out"))
        }
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

    /// Where a task's output goes: beside `download.destination` (inside an allowed root), or in
    /// the session's directory. nil for ephemeral data tasks, whose body stays in memory.
    func outputLocation(for record: TaskRecord, session: SessionState) throws(TaskFileError) -> OutputLocation? {
        switch record.kind {
        case .download:
            if let destination = record.destination {
                let parent: (dirfd: Int32, name: String)
                do {
                    parent = try allowedRoots.openParent(of: destination)
                } catch {
                    throw TaskFileError(code: error == .missing ? ENOENT : EACCES, what: "cannot open the directory of \(destination)")
                }
                let directory = AllowedRoots.directory(of: AllowedRoots.normalize(destination))
                return OutputLocation(directoryFD: parent.dirfd, directoryPath: directory, finalName: parent.name,
                                      temporaryName: TaskCoordinator.temporaryName(for: record))
            }
            let dir = layout.filesDirectory(session.identifier)
            return OutputLocation(directoryFD: try layout.openDirectory(dir), directoryPath: dir, finalName: record.id,
                                  temporaryName: "." + record.id + ".part")
        case .data, .upload:
            guard session.mode.isDurable else { return nil }
            let dir = layout.bodiesDirectory(session.identifier)
            return OutputLocation(directoryFD: try layout.openDirectory(dir), directoryPath: dir, finalName: record.id,
                                  temporaryName: "." + record.id + ".part")
        }
    }

    /// A task made from resume data takes the partial file over, moving it to its own temporary
    /// name. When that cannot be done (the file is gone, or on another file system) the download
    /// starts from zero: resume data is a hint, never a reason to fail.
    func adoptPartial(_ resume: ResumeData, for record: TaskRecord, session: SessionState) {
        if let location = try? outputLocation(for: record, session: session) {
            if renameat(AT_FDCWD, resume.partial, location.directoryFD, location.temporaryName) != 0 {
                logger.info("resume data's partial file not taken over; starting from zero",
                            metadata: ["task": .string("\(session.identifier)/\(record.id)"), "partial": .string(resume.partial)])
            }
            close(location.directoryFD)
        }
        session.locked { session.tasks[record.id]?.record.resumeFrom = nil }
    }

    /// Opens (or reopens, to continue it) the temporary file a task writes. A file kept by name
    /// can exist only once an attempt ran or resume data handed one over; a first attempt does not
    /// look for one.
    func openOutput(for record: TaskRecord, session: SessionState) throws(TaskFileError) -> TaskOutput? {
        let reopen = record.metrics.attempts > 0 || (record.isResumable && record.validator != nil)
        return try outputLocation(for: record, session: session).map { location throws(TaskFileError) in
            try TaskOutput(location, reopen: reopen)
        }
    }

    /// A task that will not run again: resume data for its partial file when it can be resumed
    /// (the file is kept), otherwise the file is removed.
    func settlePartialOutput(of record: TaskRecord, session: SessionState) -> String? {
        guard record.isResumable, record.validator != nil, let output = try? openOutput(for: record, session: session) else {
            discardPartialOutput(of: record, session: session)
            return nil
        }
        if let token = keepForResume(record, output: output) { return token }
        output.discard()
        return nil
    }

    /// Removes a partial file left by an earlier attempt (the task will not continue it).
    func discardPartialOutput(of record: TaskRecord, session: SessionState) {
        guard let location = try? outputLocation(for: record, session: session) else { return }
        unlinkat(location.directoryFD, location.temporaryName, 0)
        unlinkat(location.directoryFD, TaskCoordinator.resumeName(for: record), 0)
        close(location.directoryFD)
    }

    /// The name a partial file kept for resume data takes: the temporary name with `.resume` for
    /// `.part`.
    static func resumeName(for record: TaskRecord) -> String {
        let temporary = record.destination == nil ? "." + record.id + ".part" : temporaryName(for: record)
        return String(temporary.dropLast(5)) + ".resume"
    }

    /// A temporary name beside a client's destination: hidden, marked as ours, unique per task,
    /// and short enough for any file system (255 bytes).
    static func temporaryName(for record: TaskRecord) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (record.session + "/" + record.id).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return ".transferd-" + String(hash, radix: 16) + ".part"
    }

    /// Applies a change a running transfer reported (a response head, a redirect) to the task in
    /// memory at once; it is stored with its events a moment later (at most 0.2 s, with the other
    /// tasks' changes of that moment: `PendingChangeFlush`), or with the task's
    /// completion if that comes first — so a small download is written once, not once per head.
    func noteTransferChange(_ entry: TaskEntry, in session: SessionState, events: [EventDraft],
                            _ change: (inout TaskRecord) -> Void)
    {
        let schedule: Bool = session.locked {
            change(&entry.record)
            entry.addPendingEvents(events)
            if events.isEmpty { entry.hasPendingChange = true }
            defer { entry.pendingEventsScheduled = true }
            return !entry.pendingEventsScheduled
        }
        guard schedule else { return }
        pendingChanges.add((entry, session), clock: clock) { [self] due in
            for (entry, session) in due { flushPendingEvents(of: entry, in: session) }
        }
    }

    /// Stores what `noteTransferChange` kept back, unless a completion has taken it meanwhile. The
    /// row is only updated while it still says unfinished: a late flush never undoes a completion.
    func flushPendingEvents(of entry: TaskEntry, in session: SessionState) {
        let record: TaskRecord? = session.locked {
            entry.pendingEventsScheduled = false
            defer { entry.hasPendingChange = false }
            return entry.hasPendingEvents || entry.hasPendingChange ? entry.record : nil
        }
        guard let record else { return }
        persist(session, reportedBy: entry, [.updateTaskKeepingState(record, document: record.storageDocument())]) { _ in }
    }

    /// Closes what `openBody` opened, for a transfer that will not start after all.
    static func closeFiles(of body: RequestBodySource) {
        guard case .segments(let segments) = body else { return }
        for case .file(let fd, _, _) in segments { close(fd) }
    }

    /// Session headers first; a task header of the same name replaces the session's.
    static func mergedHeaders(session: [Header], task: [Header]) -> [(String, String)] {
        let overridden = Set(task.map { $0.name.lowercased() })
        return session.filter { !overridden.contains($0.name.lowercased()) }.map { ($0.name, $0.value) }
            + task.map { ($0.name, $0.value) }
    }
}

/// Receives one transfer's news on its curl loop and passes it to the coordinator. The quick
/// updates (response head, redirects) are applied under the session lock right here; completion,
/// which touches files and the store, moves to the file-work queue.
final class TaskTransferObserver: TransferObserver, @unchecked Sendable {
    private let coordinator: TaskCoordinator
    private let session: SessionState
    private let entry: TaskEntry

    init(coordinator: TaskCoordinator, session: SessionState, entry: TaskEntry) {
        self.coordinator = coordinator
        self.session = session
        self.entry = entry
    }

    func transferStarted(_ handle: TransferHandle) {
        session.locked {
            _ = coordinator.step(entry, .transferStarted)
            entry.record.metrics.attempts += 1
            if entry.record.startedAt == nil { entry.record.startedAt = Timestamp.now() }
        }
    }

    func transferReceivedResponse(_ handle: TransferHandle, _ response: ResponseHead, resumedAtOffset: Int64?) {
        let head = TaskResponse(response)
        var events = [EventDraft(.taskResponseReceived, task: entry.record.id, data: head.jsonBytes())]
        if let offset = resumedAtOffset {
            var json = JSONWriter()
            json.beginObject()
            json.key("offset"); json.int(offset)
            json.key("expected_total"); if let n = response.expectedContentLength { json.int(n + offset) } else { json.null() }
            json.endObject()
            events.append(EventDraft(.taskResumedAtOffset, task: entry.record.id, data: json.bytes))
        }
        session.locked { _ = coordinator.step(entry, .responseHead) }
        coordinator.noteTransferChange(entry, in: session, events: events) { record in
            record.response = head
            record.currentURL = response.url
            // Stored with the head (0.2 s later), so a partial file continues after kill -9 too.
            record.validator = TaskCoordinator.validator(after: response, previous: record.validator)
            // A file that starts over has no use for the digests of what it held.
            if resumedAtOffset == nil { record.digestCheckpoint = nil }
        }
    }

    /// Names the partial file for the next start — when it can be continued at all: a 2xx with
    /// a validator for `If-Range` (without one, the next attempt starts from zero anyway).
    func transferPartialWorthKeeping(_ handle: TransferHandle) {
        let output: TaskOutput? = session.locked {
            guard entry.transfer === handle, let status = entry.record.response?.status, (200...299).contains(status),
                  entry.record.validator != nil else { return nil }
            return entry.output
        }
        output?.nameForRestart()
    }

    func transferCheckpointedDigests(_ handle: TransferHandle, _ checkpoint: DigestCheckpoint) {
        coordinator.noteTransferChange(entry, in: session, events: []) { $0.digestCheckpoint = checkpoint }
    }

    func transferRedirected(_ handle: TransferHandle, from: String, to: String, status: Int) {
        var json = JSONWriter()
        json.beginObject()
        json.key("from"); json.string(from)
        json.key("to"); json.string(to)
        json.key("status"); json.int(status)
        json.endObject()
        coordinator.noteTransferChange(entry, in: session, events: [EventDraft(.taskRedirected, task: entry.record.id, data: json.bytes)]) {
            $0.currentURL = to
        }
    }

    func transferCompleted(_ handle: TransferHandle, _ outcome: TransferOutcome) {
        let coordinator = coordinator, session = session, entry = entry
        coordinator.fileWork.async { coordinator.transferEnded(handle, outcome, entry: entry, in: session) }
    }
}

extension TaskResponse {
    init(_ head: ResponseHead) {
        self.init(status: head.status, headers: head.headers.map { Header(name: $0.0, value: $0.1) },
                  mimeType: head.mimeType, expectedContentLength: head.expectedContentLength,
                  suggestedFilename: head.suggestedFilename)
    }
}
