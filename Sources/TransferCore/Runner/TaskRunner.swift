import Dispatch
import Lifecycles
import Logging
import TransferEngine
import TransferModel

/// Runs tasks as their lifecycles decide: starts their transfers, judges each attempt's end
/// (retried, completed, left for later), and stores and publishes what they become. It owns the
/// step from a task's lifecycle to the engine, the files and the journal; requests from clients
/// (suspend, cancel) and creation reach it as lifecycle events.
struct TaskRunner: Sendable {
    let engine: TransferEngine
    let journal: TaskJournal
    let files: TaskFiles
    /// A completion may settle its session's invalidation.
    let retirement: SessionRetirement
    /// An attempt that ended past the lease's deadline lets the session go.
    let tenure: ClusterTenure
    let limits: TaskCoordinator.Limits
    let metrics: ServiceMetrics
    /// Returns freed memory to the system when a session's burst of work ends.
    let heapTrimmer: HeapTrimmer

    var clock: any ServiceClock { journal.clock }
    var logger: Logger { journal.logger }

    /// Tells a task's lifecycle what happened (lock held) and returns what to do. An event that
    /// cannot happen where the task is changes nothing and is logged: it is a bug, not a race.
    func step(_ entry: TaskEntry, _ event: TaskLifecycle.Event) -> [TaskLifecycle.Action] {
        switch entry.lifecycle.handle(event) {
        case .perform(let actions):
            return actions
        case .invalid(let from, let event):
            logger.error("impossible task transition", metadata: [
                "task": .string("\(entry.record.session)/\(entry.record.id)"),
                "lifecycle": .string(from.description), "event": .string("\(event)"),
            ])
            return []
        }
    }

    /// Performs what a task's lifecycle decided about its output, its next start and its
    /// completion, in order. `output`: the file an attempt or a start has open, if any (otherwise
    /// the partial file is reopened by name). `ending`: the error the task completes with when the
    /// lifecycle decides on that code (a cancel's is always the same).
    func perform(_ actions: [TaskLifecycle.Action], of entry: TaskEntry, in session: SessionState,
                 output: TaskOutput? = nil, ending: TaskError? = nil)
    {
        // A released session's timers and late reports start or settle nothing (see `release`).
        if session.locked({ session.released }) { return }
        var resumeData: String?
        for (i, action) in actions.enumerated() {
            switch action {
            case .keepPartial:
                output?.keep()
            case .releaseOutput:
                output?.keep()
                perform(session.locked { step(entry, .outputReleased) }, of: entry, in: session)
            case .keepPartialForResume:
                let record = session.locked { entry.record }
                if let output {
                    resumeData = files.keepForResume(record, output: output)
                    if resumeData == nil { output.discard() }
                } else {
                    resumeData = files.settlePartialOutput(of: record, session: session)
                }
            case .discardPartial:
                if let output { output.discard() } else { files.discardPartialOutput(of: session.locked { entry.record }, session: session) }
            case .complete(let code?):
                var error = code == .cancelled ? TaskError(code: .cancelled, message: "the task was cancelled")
                    : ending ?? TaskError(code: code, message: code.rawValue)
                error.resumeData = resumeData
                complete(entry, in: session, error: error)
            case .writeRecord(event: nil):
                // What the ended attempt made of the task (progress, response, phase) is stored
                // before the task moves on.
                let rest = Array(actions[(i + 1)...])
                var record = session.locked {
                    var record = entry.record
                    record.phase = entry.lifecycle.phase
                    return record
                }
                if case .scheduleStart(let delay, .retrying)? = rest.first { record.nextAttemptAt = clock.now().adding(seconds: delay) }
                // The rest (a partial file renamed for resume data, a start) is file work: off the
                // store's completion queue, which must stay quick.
                return commit(record, of: entry, in: session, then: { [self] in
                    files.fileWork.async { perform(rest, of: entry, in: session) }
                })
            case .startTransfer:
                startTransfer(entry, in: session)
            case .scheduleStart(let delay, _):
                startLater(entry, in: session, after: delay)
            case .complete(nil), .writeRecord(event: .some), .submitTransfer, .stopTransfer, .notifyWaiters:
                // Performed where they are decided: they need the outcome, the engine or the lock.
                break
            }
        }
    }

    /// Starts the task once `delay` has passed, unless meanwhile it was suspended, cancelled or
    /// started otherwise (its lifecycle tells: a timer is never withdrawn).
    func startLater(_ entry: TaskEntry, in session: SessionState, after delay: Double) {
        // On the file pool: a start finds its body and takes over a partial file.
        clock.schedule(after: delay, on: files.fileWork) { [self] in
            perform(session.locked { step(entry, .startDue) }, of: entry, in: session)
        }
    }
}
