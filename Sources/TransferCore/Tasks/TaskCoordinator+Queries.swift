import TransferModel

extension TaskCoordinator {
    package struct TaskPage {
        package let tasks: [TaskRecord]
        /// The cursor for the next page, when there may be one.
        package let next: Int64?
    }

    /// A page of a session's tasks in creation order, paged in the session's store (which holds
    /// every committed task) with the fresher in-memory copy of each task swapped in.
    package func listTasks(_ session: SessionState, after: Int64, state: TaskState?, kind: TaskKind?, limit: Int) throws(Refusal) -> TaskPage {
        var page: [TaskRecord]
        do {
            page = try store(of: session).listTasks(session: session.identifier, after: after, state: state, kind: kind, limit: limit + 1)
        } catch {
            throw Refusal.storeFailure(error)
        }
        session.locked {
            for i in page.indices {
                if let entry = session.tasks[page[i].id], !entry.lifecycle.isDeleted { page[i] = entry.snapshot }
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
