import TransferModel

extension TaskCoordinator {
    package struct TaskPage {
        package let tasks: [TaskRecord]
        /// The cursor for the next page, when there may be one.
        package let next: Int64?
    }

    /// A page of a session's tasks in creation order. Durable sessions are paged in SQLite (which
    /// holds every committed task) with the fresher in-memory copy of each task swapped in;
    /// ephemeral ones from memory.
    package func listTasks(_ session: SessionState, after: Int64, state: TaskState?, kind: TaskKind?, limit: Int) throws(Refusal) -> TaskPage {
        var page: [TaskRecord]
        if session.mode.isDurable, let store {
            do {
                page = try store.listTasks(session: session.identifier, after: after, state: state, kind: kind, limit: limit + 1)
            } catch {
                throw Refusal.storeFailure(error)
            }
            session.locked {
                for i in page.indices {
                    if let entry = session.tasks[page[i].id], !entry.lifecycle.isDeleted { page[i] = entry.snapshot }
                }
            }
        } else {
            page = session.locked {
                session.tasks.values.lazy.filter { !$0.lifecycle.isDeleted }.map(\.snapshot)
                    .filter { $0.sequence > after && (state == nil || $0.state == state) && (kind == nil || $0.kind == kind) }
                    .sorted { $0.sequence < $1.sequence }
                    .prefix(limit + 1).map { $0 }
            }
        }
        let more = page.count > limit
        if more { page.removeLast() }
        return TaskPage(tasks: page, next: more ? page.last?.sequence : nil)
    }

    /// Tasks by state across sessions, for `/v1/stats`.
    package func taskCounts() -> [TaskState: Int] {
        var totals: [TaskState: Int] = [:]
        for session in registry.all {
            session.locked { for (state, n) in session.counts { totals[state, default: 0] += n } }
        }
        return totals
    }
}
