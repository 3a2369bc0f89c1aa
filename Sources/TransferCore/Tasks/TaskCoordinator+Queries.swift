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

    /// Tasks by state across the sessions whose identifiers `visible` accepts (every session by
    /// default), for `/v1/stats` and task quotas.
    package func taskCounts(where visible: (String) -> Bool = { _ in true }) -> [TaskState: Int] {
        var totals: [TaskState: Int] = [:]
        for session in registry.all where visible(session.identifier) {
            session.locked { for (state, n) in session.counts { totals[state, default: 0] += n } }
        }
        // Cluster mode: the sessions other replicas hold count as committed, so a quota holds
        // across replicas.
        for (state, n) in countsHeldElsewhere(where: visible) { totals[state, default: 0] += n }
        return totals
    }

    /// What the transfers of some sessions are doing, for a caller who sees only those: how many
    /// wait for a slot, how many run, and their rates as their progress reports them (body bytes
    /// received by downloads and data tasks, sent by uploads).
    package func activity(where visible: (String) -> Bool) -> (waiting: Int, running: Int, down: Double, up: Double) {
        var result = (waiting: 0, running: 0, down: 0.0, up: 0.0)
        for session in registry.all where visible(session.identifier) {
            session.locked {
                for entry in session.tasks.values where entry.record.state == .running {
                    switch entry.record.phase {
                    case .scheduled: result.waiting += 1
                    case .connecting, .transferring:
                        result.running += 1
                        if entry.record.kind == .upload { result.up += entry.record.progress.bytesPerSecond }
                        else { result.down += entry.record.progress.bytesPerSecond }
                    case .waiting, .retrying, .finished: break
                    }
                }
            }
        }
        return result
    }
}
