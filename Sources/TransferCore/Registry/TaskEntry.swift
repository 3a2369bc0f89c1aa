import Lifecycles
import Reactor
import TransferEngine
import TransferModel

/// A task held in memory, guarded by its session's lock: the record, and while it runs, the
/// engine's handle and the open output file.
package final class TaskEntry: @unchecked Sendable {
    var record: TaskRecord {
        didSet { encoded = nil }
    }
    /// The API encoding of a completed `record` (an ephemeral session's: a durable session's task
    /// leaves memory as it completes): encoded once however often it is read. An unfinished one
    /// is encoded per read: most are never read while they wait, and hundreds of thousands of
    /// them may wait, each encoding as large as its record.
    private var encoded: [UInt8]?
    var transfer: TransferHandle?
    var output: TaskOutput?
    /// The body of an ephemeral session's data task (nothing of those goes to disk).
    package var memoryBody: [UInt8]?
    /// Where the task is in its life: who holds its output file (a start being prepared, a
    /// transfer, an attempt's end being settled), what was asked meanwhile, whether its completion
    /// is decided. Changed only through `TaskRunner.step`, which performs what it answers.
    var lifecycle: TaskLifecycle
    /// Long-polls (`GET …?wait=`) waiting for completion.
    var completionWaiters: [@Sendable (TaskRecord) -> Void] = []
    /// The last progress sample (monotonic ns, bytes moved) and the rate measured up to it.
    private var sample: (at: UInt64, bytes: Int64) = (0, 0)
    private var rate: Double = 0

    /// Events a running transfer reported (response head, redirects), waiting to be stored with
    /// the next write of the task: a quick download's completion carries them, so its task is not
    /// rewritten once per response head.
    private var pendingEvents: [EventDraft] = []
    var pendingEventsScheduled = false
    /// The record changed with no event to go with it (a digest checkpoint): the next flush
    /// stores it all the same.
    var hasPendingChange = false
    /// Bytes moved as the last `task.progress` told.
    var progressEventBytes: Int64 = 0

    func addPendingEvents(_ events: [EventDraft]) { pendingEvents += events }

    var hasPendingEvents: Bool { !pendingEvents.isEmpty }

    func takePendingEvents() -> [EventDraft] {
        defer { pendingEvents = [] }
        return pendingEvents
    }

    /// Events taken for a commit the store refused: they go first again, before any reported since.
    func returnPendingEvents(_ events: [EventDraft]) { pendingEvents = events + pendingEvents }

    /// Replaces the record, with its encoding when the caller has it.
    func setRecord(_ record: TaskRecord, encoded: [UInt8]?) {
        self.record = record
        if keepsEncoding { self.encoded = encoded }
    }

    init(record: TaskRecord, lifecycle: TaskLifecycle) {
        self.record = record
        self.lifecycle = lifecycle
    }

    private var keepsEncoding: Bool { transfer == nil && record.isCompleted }

    /// The task object as the API returns it (lock held).
    var json: [UInt8] {
        if let encoded { return encoded }
        let bytes = snapshot.jsonBytes()
        if keepsEncoding { encoded = bytes }
        return bytes
    }

    /// The record with live progress from the engine folded in — once the transfer is admitted:
    /// a queued one has opened nothing yet, so its own counters know nothing of the partial file
    /// the record's progress describes.
    var snapshot: TaskRecord {
        guard let transfer, transfer.phase != .waiting else { return record }
        var r = record
        r.progress.bytesReceived = transfer.bytesReceived
        let expected = transfer.bytesExpectedToReceive
        if expected >= 0 { r.progress.bytesExpectedToReceive = expected }
        r.progress.bytesSent = transfer.bytesSent
        let expectedToSend = transfer.bytesExpectedToSend
        if expectedToSend >= 0 { r.progress.bytesExpectedToSend = expectedToSend }
        if r.state == .running && r.phase != .retrying {
            r.phase = TaskPhase(rawValue: transfer.phase.name) ?? r.phase
        }
        r.progress.bytesPerSecond = currentRate(bytes: r.progress.bytesReceived + r.progress.bytesSent)
        return r
    }

    /// Bytes per second over the last second or so, re-measured when a reader asks and the
    /// previous sample is at least half a second old (lock held).
    private func currentRate(bytes: Int64) -> Double {
        let now = MonotonicClock.now()
        if sample.at == 0 {
            sample = (now, bytes)
        } else if now - sample.at >= 500_000_000 {
            rate = Double(bytes - sample.bytes) / (Double(now - sample.at) / 1e9)
            sample = (now, bytes)
        }
        return rate
    }
}
