import Reactor
import TransferStore

extension TaskCoordinator {
    /// Every few seconds, the progress of running tasks in durable sessions goes to the store in
    /// one transaction — never per chunk. Only the progress inside the stored document changes,
    /// and only while the row still says running, so a flush that loses a race with a completion
    /// cannot turn a completed task back.
    package func startProgressFlushing(every seconds: Double = 5) {
        clock.execute { [self] in scheduleProgressFlush(seconds) }
    }

    private func scheduleProgressFlush(_ seconds: Double) {
        clock.scheduleTimer(at: MonotonicClock.after(seconds: seconds)) { [self] in
            flushProgress()
            scheduleProgressFlush(seconds)
        }
    }

    func flushProgress() {
        var rows: [ProgressUpdate] = []
        for session in registry.all where session.mode.isDurable {
            session.locked {
                for entry in session.tasks.values where entry.transfer != nil {
                    let snapshot = entry.snapshot
                    rows.append(ProgressUpdate(session: session.identifier, id: snapshot.id, progress: snapshot.progress))
                }
            }
        }
        guard !rows.isEmpty else { return }
        store.commit([.flushProgress(rows)]) { _ in }
    }
}
