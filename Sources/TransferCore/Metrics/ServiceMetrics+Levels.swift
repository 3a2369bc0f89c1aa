import Glibc
import Lifecycles
import Prometheus
import TransferEngine
import TransferModel

extension ServiceMetrics {
    /// Sets the gauges that are levels rather than events, from what is in memory, just before
    /// `/metrics` is written: one pass over the sessions, and over the tasks in memory of those
    /// with unfinished ones — completed tasks of durable sessions are not in memory, and are
    /// counted by `transferd_tasks_completed_total` instead — and no query to the store.
    func collect(from registry: SessionRegistry, engine: TransferEngine, dataDirectory: String) {
        let unfinished: [TaskState] = TaskState.allCases.filter { $0 != .completed }
        var tasks: [TaskState: [TaskKind: Int]] = [:]
        var sessions: [SessionMode: Int] = [:]
        var eventsPending = 0
        for session in registry.all {
            sessions[session.mode, default: 0] += 1
            session.locked {
                eventsPending += session.pendingEvents
                guard session.unfinishedCount > 0 else { return }
                for entry in session.tasks.values where entry.record.state != .completed {
                    tasks[entry.record.state, default: [:]][entry.record.kind, default: 0] += 1
                }
            }
        }
                let tasksGauge = ServiceMetrics.name("transferd_tasks", "Tasks not completed yet, by state (running, suspended, canceling) and kind.")
        for state in unfinished {
            for kind in TaskKind.allCases {
                self.registry.makeGauge(descriptor: tasksGauge, labels: [("state", state.rawValue), ("kind", kind.rawValue)])
                    .set(Double(tasks[state]?[kind] ?? 0))
            }
        }
        let sessionsGauge = ServiceMetrics.name("transferd_sessions", "Sessions, by mode.")
        for mode in SessionMode.allCases {
            self.registry.makeGauge(descriptor: sessionsGauge, labels: [("mode", mode.rawValue)]).set(Double(sessions[mode] ?? 0))
        }
        self.registry.makeGauge(descriptor: ServiceMetrics.name("transferd_events_pending",
                                                           "Events journaled and not yet acknowledged by a client or received by a webhook."))
            .set(Double(eventsPending))
        let handles = engine.curlHandles
        let handlesGauge = ServiceMetrics.name("transferd_curl_handles",
                                               "curl easy handles: active (attached to a running transfer or webhook) or idle (pooled).")
        self.registry.makeGauge(descriptor: handlesGauge, labels: [("state", "active")]).set(Double(handles.active))
        self.registry.makeGauge(descriptor: handlesGauge, labels: [("state", "idle")]).set(Double(handles.idle))
        var space = statvfs()
        if statvfs(dataDirectory, &space) == 0 {
            self.registry.makeGauge(descriptor: ServiceMetrics.name("transferd_data_dir_free_bytes",
                                                               "Bytes free for transferd in the file system of its data directory."))
                .set(Double(space.f_bavail) * Double(space.f_frsize))
        }
        syncBytes()
    }
}
