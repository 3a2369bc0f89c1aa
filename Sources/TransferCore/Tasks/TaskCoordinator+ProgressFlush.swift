import Reactor
import TransferModel

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
        guard let store else { return }
        var rows: [(String, String, TaskProgress)] = []
        for session in registry.all where session.mode.isDurable {
            session.locked {
                for entry in session.tasks.values where entry.transfer != nil {
                    let snapshot = entry.snapshot
                    rows.append((session.identifier, snapshot.id, snapshot.progress))
                }
            }
        }
        guard !rows.isEmpty else { return }
        store.writer.submit({ db in
            let update = try db.statement("""
                UPDATE tasks SET doc = json_set(doc, '$.progress.bytes_received', ?, '$.progress.bytes_expected_to_receive', ?,
                  '$.progress.bytes_sent', ?, '$.progress.bytes_expected_to_send', ?)
                WHERE session = ? AND id = ? AND state = 'running'
                """)
            for (session, id, p) in rows {
                try update.bind(.integer(p.bytesReceived), .integer(p.bytesExpectedToReceive), .integer(p.bytesSent),
                                .integer(p.bytesExpectedToSend), .text(session), .text(id))
                try update.run()
            }
        }) { _ in }
    }
}
