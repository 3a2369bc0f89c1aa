import TransferEngine
import TransferStore

extension TaskJournal {
    /// Every few seconds, the progress of running tasks in durable sessions goes to the store in
    /// one transaction — never per chunk. Only the progress inside the stored document changes,
    /// and only while the row still says running, so a flush that loses a race with a completion
    /// cannot turn a completed task back.
    func startProgressFlushing(every seconds: Double) {
        clock.schedule(after: seconds) { [self] in
            flushProgress()
            startProgressFlushing(every: seconds)
        }
    }

    func flushProgress() {
        let rows = progressUpdates()
        guard !rows.isEmpty else { return }
        store.commit([.flushProgress(rows)]) { _ in }
    }

    /// The progress of durable sessions' transfers under way. A transfer still waiting in its
    /// session's admission queue has moved nothing since its task was last stored (created, or
    /// its previous attempt's end): its row is left as it is. A burst of thousands queued had every
    /// row rewritten at every flush; the slower the burst, the more of the writer's work that was.
    func progressUpdates() -> [ProgressUpdate] {
        var rows: [ProgressUpdate] = []
        for session in registry.all where session.mode.isDurable {
            session.locked {
                for entry in session.tasks.values where entry.transfer.map({ $0.phase != .waiting }) ?? false {
                    let snapshot = entry.snapshot
                    rows.append(ProgressUpdate(session: session.identifier, id: snapshot.id, progress: snapshot.progress))
                }
            }
        }
        return rows
    }
}
