import TransferModel

/// Batches, all or nothing. A batch is checked before it changes anything when that check is
/// exact: at most one change of each kind that can fail (so they cannot clash with each other)
/// and nothing that removes what those are checked against. Then it is applied in place. Any
/// other batch is applied change by change to a copy of the state, kept only if all succeeded;
/// the copy costs as much as what it changes (a session's tasks, its journal), so the batches
/// the core sends, one insert of tasks or events with updates, take the first way.
extension InMemoryState {
    mutating func commit(_ changes: [StoreChange]) throws -> CommitReport {
        var report = CommitReport()
        if checkableFirst(changes) {
            for change in changes { try check(change) }
            for change in changes { apply(change, to: &report) }
            return report
        }
        var next = self
        for change in changes {
            try next.check(change)
            next.apply(change, to: &report)
        }
        self = next
        return report
    }

    private func checkableFirst(_ changes: [StoreChange]) -> Bool {
        var tasks = 0, events = 0, blobs = 0
        var removes = false
        for change in changes {
            switch change {
            case .insertTasks: tasks += 1
            case .insertEvents: events += 1
            case .insertBlob: blobs += 1
            case .deleteSession, .deleteTask, .deleteEventsOlder, .deleteBlob: removes = true
            case .upsertSession, .setAcked, .setDelivered: removes = removes || options.trimsAcknowledgedEvents
            default: break
            }
        }
        return tasks + events + blobs == 0 || (max(tasks, events, blobs) == 1 && !removes)
    }

    /// Throws what applying `change` to the state as it is would fail with.
    private func check(_ change: StoreChange) throws {
        switch change {
        case .insertTasks(let tasks, _): try check(tasks)
        case .insertEvents(let events): try check(events)
        case .insertBlob(let blob):
            guard blobs[blob.id] == nil else { throw StoreError.rejected("blob \(blob.id) exists") }
        default: break
        }
    }

    private func check(_ tasks: [TaskRecord]) throws {
        // Against the stored tasks first, so a clash is reported with the stored task, as a
        // store that inserts and undoes would find it.
        for task in tasks {
            let stored = sessions[task.session]
            if let existing = stored?.tasks[task.id] ?? task.idempotencyKey.flatMap({ stored?.keys[$0] }).flatMap({ stored?.tasks[$0] }) {
                throw StoreError.conflict(existing: existing)
            }
        }
        var batch = Set<String>()
        for task in tasks {
            let taken = sessions[task.session]?.sequences.contains(task.sequence) ?? false
            guard !taken, batch.insert("id \(task.session)/\(task.id)").inserted,
                  batch.insert("sequence \(task.session)/\(task.sequence)").inserted,
                  task.idempotencyKey.map({ batch.insert("key \(task.session)/\($0)").inserted }) ?? true
            else { throw StoreError.rejected("task \(task.session)/\(task.id) clashes with another of its batch") }
        }
    }

    private func check(_ events: [Event]) throws {
        var batch = Set<String>()
        for event in events {
            let journal = sessions[event.session]?.events ?? []
            let at = InMemoryState.position(after: event.seq - 1, in: journal)
            let seqTaken = at < journal.count && journal[at].seq == event.seq
            guard !eventIDs.contains(event.id), !seqTaken, batch.insert("id \(event.id)").inserted,
                  batch.insert("seq \(event.session)/\(event.seq)").inserted
            else { throw StoreError.rejected("event \(event.session)/\(event.seq) exists") }
        }
    }
}
