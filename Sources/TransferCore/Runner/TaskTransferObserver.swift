import Digests
import JSON
import Lifecycles
import TransferEngine
import TransferModel

/// Receives one transfer's news on its curl loop and passes it to the runner. The quick
/// updates (response head, redirects) are applied under the session lock right here; completion,
/// which touches files and the store, moves to the file-work queue.
final class TaskTransferObserver: TransferObserver, Sendable {
    private let runner: TaskRunner
    private let session: SessionState
    private let entry: TaskEntry
    /// The transfer is a resumable upload's next exchange within one attempt: the task's
    /// lifecycle and `metrics.attempts` saw the attempt start already.
    private let continuing: Bool

    init(runner: TaskRunner, session: SessionState, entry: TaskEntry, continuing: Bool = false) {
        self.runner = runner
        self.session = session
        self.entry = entry
        self.continuing = continuing
    }

    func transferStarted(_ handle: TransferHandle) {
        guard !continuing else { return }
        session.locked {
            _ = runner.step(entry, .transferStarted)
            entry.record.metrics.attempts += 1
            if entry.record.startedAt == nil { entry.record.startedAt = runner.clock.now() }
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
        session.locked { _ = runner.step(entry, .responseHead) }
        runner.journal.noteTransferChange(entry, in: session, events: events) { record in
            record.response = head
            record.currentURL = response.url
            // Stored with the head (0.2 s later), so a partial file continues after kill -9 too.
            record.validator = TaskRunner.validator(after: response, previous: record.validator)
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
        runner.journal.noteTransferChange(entry, in: session, events: []) { $0.digestCheckpoint = checkpoint }
    }

    /// The resumable upload draft's 104: the upload resource, stored with the next batch of
    /// changes so a restart finds it.
    func transferReceivedUploadResumption(_ handle: TransferHandle, _ response: ResponseHead) {
        let reply = UploadResumption.Reply(response)
        runner.journal.noteTransferChange(entry, in: session, events: []) { record in
            guard var state = record.uploadState, state.interimReceived(reply) else { return }
            record.uploadState = state
        }
    }

    func transferRedirected(_ handle: TransferHandle, from: String, to: String, status: Int) {
        var json = JSONWriter()
        json.beginObject()
        json.key("from"); json.string(from)
        json.key("to"); json.string(to)
        json.key("status"); json.int(status)
        json.endObject()
        runner.journal.noteTransferChange(entry, in: session, events: [EventDraft(.taskRedirected, task: entry.record.id, data: json.bytes)]) {
            $0.currentURL = to
        }
    }

    func transferCompleted(_ handle: TransferHandle, _ outcome: TransferOutcome) {
        let runner = runner, session = session, entry = entry
        runner.files.fileWork.async { runner.transferEnded(handle, outcome, entry: entry, in: session) }
    }
}

extension TaskResponse {
    init(_ head: ResponseHead) {
        self.init(status: head.status, headers: head.headers.map { Header(name: $0.0, value: $0.1) },
                  mimeType: head.mimeType, expectedContentLength: head.expectedContentLength,
                  suggestedFilename: head.suggestedFilename)
    }

    /// Whether `init(head)` would give this, made from a head with the same URL: every other
    /// member derives from the status and the fields, and comparing those costs less than deriving.
    func hasFields(of head: ResponseHead) -> Bool {
        status == head.status && headers.count == head.headers.count
            && zip(headers, head.headers).allSatisfy { $0.name == $1.0 && $0.value == $1.1 }
    }
}
