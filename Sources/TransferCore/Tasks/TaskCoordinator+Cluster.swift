import TransferEngine
import TransferModel
import TransferStore

/// Cluster mode: each session is held by one replica at a time (a lease in the shared store). The
/// holder keeps the session in memory and runs its tasks; the others forward its requests to it.
/// These are the two moments of a lease the core sees: taking a session over, and losing it.
extension TaskCoordinator {
    /// This replica took the leases of `identifiers`: they come into memory as at a start-up, their
    /// background tasks continuing from their partial files (Range) and their deliveries from what
    /// was delivered. A session already in memory is left as it is. Returns those adopted.
    /// One adoption at a time: the claiming round and a request's look-up may both come to adopt
    /// the same session, and two copies of it in memory would run each task twice.
    @discardableResult
    package func adopt(_ identifiers: [String]) throws -> [String] {
        try adoptions.withLock { try adoptOnce(identifiers) }
    }

    private func adoptOnce(_ identifiers: [String]) throws -> [String] {
        let wanted = Set(identifiers.filter { registry.session($0) == nil })
        guard !wanted.isEmpty else { return [] }
        var rows = try store.loadSessions().filter { wanted.contains($0.identifier) }
        // An ephemeral session lived only in its holder's memory: with the holder gone, so is
        // it, as after a restart. Its announcement goes too.
        let orphans = rows.filter { SessionMode(rawValue: $0.mode)?.isDurable == false }.map(\.identifier)
        if !orphans.isEmpty {
            store.commit(orphans.map { .deleteSession($0) }) { _ in }
            rows.removeAll { orphans.contains($0.identifier) }
        }
        guard !rows.isEmpty else { return [] }
        let summaries = try store.loadSessionSummaries(rows.map(\.identifier))
        let tasks = try store.loadUnfinishedTasks().filter { wanted.contains($0.session) }
        restore(rows, summaries: summaries, tasks: tasks)
        for row in rows { logger.info("session taken over", metadata: ["session": .string(row.identifier)]) }
        return rows.map(\.identifier)
    }

    /// The lease on `identifier` is gone (it expired, or another replica holds it now): this
    /// replica stops acting for the session at once and forgets it. Its transfers stop without
    /// reporting, its deliveries stop, and nothing more of it is written — the store would refuse
    /// it (fencing), and the files in the shared data directory are the new holder's now.
    package func release(_ identifier: String) {
        guard let session = registry.session(identifier) else { return }
        registry.remove(session)
        let transfers = session.locked { () -> [TransferHandle] in
            session.released = true
            session.delegate = nil
            return session.tasks.values.compactMap(\.transfer)
        }
        updateDelegateChannel(session)
        // Fenced at once, not when their loop gets to them: a renewal may open the replica's
        // write fence again right after this, for the sessions it kept.
        for transfer in transfers { transfer.stop(.fenced) }
        completedReplies.invalidate(session: identifier)
        logger.warning("session lease lost; stopped acting for it", metadata: ["session": .string(identifier)])
    }

    /// Every session, for a listing: this replica's in memory and, in cluster mode, the others'
    /// as their stored rows show them (counts as committed), so any replica lists them all.
    package func listedSessions() throws(Refusal) -> [SessionState] {
        let local = registry.all
        guard sharesStore else { return local }
        do {
            let held = Set(local.map(\.identifier))
            let rows = try store.loadSessions().filter { !held.contains($0.identifier) }
            let summaries = try store.loadSessionSummaries(rows.map(\.identifier))
            return local + rows.compactMap { sessionState($0, summary: summaries[$0.identifier]) }
        } catch {
            throw Refusal.storeFailure(error)
        }
    }

    /// The session a reader of its events means: the one in memory, or in cluster mode a durable
    /// session another replica holds, as a view whose feed this replica keeps fed (see
    /// `SessionViews`, `eventsCommitted`).
    package func sessionForReading(_ identifier: String) throws(Refusal) -> SessionState {
        if let session = registry.session(identifier) { return session }
        guard sharesStore else { throw Refusal.notFound("session \(identifier)") }
        let view: SessionState?
        do {
            view = try views.view(identifier) {
                guard let row = try store.loadSessions().first(where: { $0.identifier == identifier }) else { return nil }
                return sessionState(row, summary: nil)
            }
        } catch {
            throw Refusal.storeFailure(error)
        }
        guard let view, view.mode.isDurable else { throw Refusal.notFound("session \(identifier)") }
        return view
    }

    /// Whether this replica reads `identifier`'s journal itself: it holds the session, or the
    /// session is durable (its journal is in the shared store). An ephemeral session another
    /// replica holds has its journal only there.
    package func readsEventsHere(_ identifier: String) -> Bool {
        (try? sessionForReading(identifier)) != nil
    }

    /// The store said `identifier` committed events (a notification), or it is time to look
    /// (`nil`: every view): readers on this replica of sessions held elsewhere get them.
    package func eventsCommitted(_ identifier: String?) {
        for id in identifier.map({ [$0] }) ?? views.identifiers {
            views.refresh(id) { seq in try store.events(session: id, after: seq, limit: 1000) }
        }
    }

    /// Cluster mode: an ephemeral session's tasks and events never leave its holder's memory, but
    /// its row goes to the shared store too (and leaves it with the session), so the other
    /// replicas know the session and who holds it, and forward its requests there.
    func announceEphemeral(_ session: SessionState, _ change: StoreChange) {
        guard sharesStore, !session.mode.isDurable else { return }
        store.commit([change]) { [logger] result in
            if case .failure(let error) = result {
                logger.error("could not announce an ephemeral session to the cluster",
                             metadata: ["session": .string(session.identifier), "error": "\(error)"])
            }
        }
    }

    /// Task counts of the visible sessions other replicas hold, as their store rows say (none
    /// outside cluster mode, or while the store cannot be read).
    func countsHeldElsewhere(where visible: (String) -> Bool) -> [TaskState: Int] {
        guard sharesStore else { return [:] }
        let others = ((try? store.loadSessions()) ?? []).map(\.identifier).filter { !holds($0) && visible($0) }
        guard !others.isEmpty, let summaries = try? store.loadSessionSummaries(others) else { return [:] }
        var totals: [TaskState: Int] = [:]
        for summary in summaries.values {
            for (state, n) in summary.counts { totals[state, default: 0] += n }
        }
        return totals
    }

    /// Cluster mode: the reply of a completed task of a session another replica holds, as this
    /// replica last relayed it from the holder; nil without a copy, or when this replica holds the
    /// session (its own path answers then). A copy stays good until the holder's store notifies a
    /// change of the task (`tasksChanged`).
    package func completedCopy(session: String, id: String) -> [UInt8]? {
        guard sharesStore, copiesTrusted.withLock({ $0 }), !holds(session) else { return nil }
        return completedReplies.lookup(session: session, id: id).reply
    }

    /// Whether copies of other replicas' completed tasks may be kept and answered from: only while
    /// their changes are being notified here. Turning it on or off drops every copy (changes
    /// notified meanwhile were missed).
    package func trustCopies(_ trusted: Bool) {
        copiesTrusted.withLock { $0 = trusted }
        completedReplies.clear()
    }

    /// Keeps the reply of a completed task relayed from its holder, unless the task changed since
    /// `generation` (`copyGeneration`, taken before the request went out).
    package func keepCopy(_ reply: [UInt8], session: String, id: String, generation: UInt64) {
        guard copiesTrusted.withLock({ $0 }) else { return }
        completedReplies.insert(reply, session: session, id: id, generation: generation)
    }

    package func copyGeneration(session: String, id: String) -> UInt64 {
        completedReplies.lookup(session: session, id: id).generation
    }

    /// The store notified a change of a stored task (`session/task`), or of a whole session
    /// (`session/`): copies of their replies are dropped.
    package func tasksChanged(_ key: String) {
        guard let slash = key.lastIndex(of: "/") else { return }
        let session = String(key[..<slash]), id = String(key[key.index(after: slash)...])
        completedReplies.invalidate(session: session, id: id.isEmpty ? nil : id)
    }

    /// Cluster mode: the deadline the engine holds writes to files to, which the leases' renewals
    /// move (nil on one node).
    package var writeFence: WriteFence? { engine.fence }

    /// Whether this replica holds `identifier` in memory.
    package func holds(_ identifier: String) -> Bool { registry.session(identifier) != nil }

    /// The identifiers of the sessions this replica holds in memory.
    package var heldSessions: [String] { registry.all.map(\.identifier) }
}
