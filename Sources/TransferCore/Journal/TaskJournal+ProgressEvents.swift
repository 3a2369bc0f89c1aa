import JSON
import TransferModel

extension TaskJournal {
    /// Once a second, `task.progress` for each task of a session someone listens to whose transfer
    /// moved bytes since the last one (URLSession's didWriteData / didSendBodyData): live only,
    /// never journaled (throttled: at most one a second a task).
    func startProgressEvents() {
        clock.schedule(after: 1) { [self] in
            publishProgress()
            startProgressEvents()
        }
    }

    private func publishProgress() {
        let now = clock.now()
        for session in registry.all where session.feed.hasListeners {
            let events: [Event] = session.locked {
                session.tasks.values.compactMap { entry in
                    guard entry.transfer != nil else { return nil }
                    let snapshot = entry.snapshot
                    let moved = snapshot.progress.bytesReceived + snapshot.progress.bytesSent
                    guard moved != entry.progressEventBytes else { return nil }
                    entry.progressEventBytes = moved
                    var json = JSONWriter()
                    snapshot.encodeProgress(into: &json)
                    return Event(id: Event.newID(), seq: 0, session: session.identifier, type: .taskProgress,
                                 task: snapshot.id, at: now, data: json.bytes)
                }
            }
            for event in events { session.feed.publish([event]) }
        }
    }
}
