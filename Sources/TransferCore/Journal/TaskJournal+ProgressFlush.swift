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
        var rows: [ProgressUpdate] = []
        for session in registry.all where session.mode.isDurable {
            session.onExecutor {
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
