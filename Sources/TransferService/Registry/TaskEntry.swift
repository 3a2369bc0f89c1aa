import TransferEngine

/// A task held in memory, guarded by its session's lock: the record, and while it runs, the
/// engine's handle and the open output file.
final class TaskEntry: @unchecked Sendable {
    var record: TaskRecord
    var transfer: TransferHandle?
    var output: TaskOutput?
    /// The body of an ephemeral session's data task (nothing of those goes to disk).
    var memoryBody: [UInt8]?
    /// What to do once the running transfer has stopped.
    var afterStop: AfterStop = .nothing
    /// Long-polls (`GET …?wait=`) waiting for completion.
    var completionWaiters: [@Sendable (TaskRecord) -> Void] = []
    var deleted = false

    enum AfterStop {
        case nothing, resume
    }

    init(record: TaskRecord) {
        self.record = record
    }

    /// The record with live progress from the engine folded in.
    var snapshot: TaskRecord {
        guard let transfer else { return record }
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
        return r
    }
}
