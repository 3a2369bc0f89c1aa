import Logging
import Reactor
import Synchronization
import TransferEngine
import TransferModel
import TransferStore

/// Cluster mode: each session is held by one replica at a time (a lease in the shared store). The
/// holder keeps the session in memory and runs its tasks; the others forward its requests to it.
/// This is what the core knows of that tenure: losing a session, the sessions held elsewhere as
/// the store shows them, and copies of their completed tasks' replies. (Taking a session over is a
/// recovery: `TaskCoordinator.adopt`.)
final class ClusterTenure: Sendable {
    let store: any TransferStore
    let registry: SessionRegistry
    let engine: TransferEngine
    let completedReplies: CompletedReplyCache
    let clock: any ServiceClock
    let logger: Logger
    /// Cluster mode: the store is shared with other replicas, each holding some of the sessions.
    /// Set before the service starts.
    let sharesStore = Atomic<Bool>(false)
    /// Cluster mode: sessions other replicas hold, as their event readers here see them.
    let views = SessionViews()
    /// Cluster mode: whether copies of other replicas' completed tasks are kept (`trustCopies`).
    private let copiesTrusted = Locked(false)

    init(store: any TransferStore, registry: SessionRegistry, engine: TransferEngine, completedReplies: CompletedReplyCache,
         clock: any ServiceClock, logger: Logger)
    {
        self.store = store
        self.registry = registry
        self.engine = engine
        self.completedReplies = completedReplies
        self.clock = clock
        self.logger = logger
    }

    private var shared: Bool { sharesStore.load(ordering: .relaxed) }

    /// The lease on `identifier` is gone (it expired, or another replica holds it now): this
    /// replica stops acting for the session at once and forgets it. Its transfers stop without
    /// reporting, its deliveries stop, and nothing more of it is written — the store would refuse
    /// it (fencing), and the files in the shared data directory are the new holder's now.
    func release(_ identifier: String) {
        guard let session = registry.session(identifier) else { return }
        registry.remove(session)
        let transfers = session.locked { () -> [TransferHandle] in
            session.released = true
            return session.tasks.values.compactMap(\.transfer)
        }
        session.withdrawDelegate()
        // Fenced at once, not when their loop gets to them: a renewal may open the replica's
        // write fence again right after this, for the sessions it kept.
        for transfer in transfers { transfer.stop(.fenced) }
        completedReplies.invalidate(session: identifier)
        logger.warning("session lease lost; stopped acting for it", metadata: ["session": .string(identifier)])
    }

    /// Every session, for a listing: this replica's in memory and, in cluster mode, the others'
    /// as their stored rows show them (counts as committed), so any replica lists them all.
    func listedSessions() throws(Refusal) -> [SessionState] {
        let local = registry.all
        guard shared else { return local }
        do {
            let held = Set(local.map(\.identifier))
            let rows = try store.loadSessions().filter { !held.contains($0.identifier) }
            let summaries = try store.loadSessionSummaries(rows.map(\.identifier))
            return local + rows.compactMap { SessionState.restoring($0, summary: summaries[$0.identifier], at: clock.now(), logger: logger) }
        } catch {
            throw Refusal.storeFailure(error)
        }
    }

    /// The session a reader of its events means: the one in memory, or in cluster mode a durable
    /// session another replica holds, as a view whose feed this replica keeps fed (see
    /// `SessionViews`, `eventsCommitted`).
    func sessionForReading(_ identifier: String) throws(Refusal) -> SessionState {
        if let session = registry.session(identifier) { return session }
        guard shared else { throw Refusal.notFound("session \(identifier)") }
        let view: SessionState?
        do {
            view = try views.view(identifier) {
                guard let row = try store.loadSessions().first(where: { $0.identifier == identifier }) else { return nil }
                return SessionState.restoring(row, summary: nil, at: clock.now(), logger: logger)
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
    func readsEventsHere(_ identifier: String) -> Bool {
        (try? sessionForReading(identifier)) != nil
    }

    /// The store said `identifier` committed events (a notification), or it is time to look
    /// (`nil`: every view): readers on this replica of sessions held elsewhere get them.
    func eventsCommitted(_ identifier: String?) {
        for id in identifier.map({ [$0] }) ?? views.identifiers {
            views.refresh(id) { seq in try store.events(session: id, after: seq, limit: 1000) }
        }
    }

    /// Cluster mode: an ephemeral session's tasks and events never leave its holder's memory, but
    /// its row goes to the shared store too (and leaves it with the session), so the other
    /// replicas know the session and who holds it, and forward its requests there.
    func announceEphemeral(_ session: SessionState, _ change: StoreChange) {
        guard shared, !session.mode.isDurable else { return }
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
        guard shared else { return [:] }
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
    func completedCopy(session: String, id: String) -> [UInt8]? {
        guard shared, copiesTrusted.withLock({ $0 }), !holds(session) else { return nil }
        return completedReplies.lookup(session: session, id: id).reply
    }

    /// Whether copies of other replicas' completed tasks may be kept and answered from: only while
    /// their changes are being notified here. Turning it on or off drops every copy (changes
    /// notified meanwhile were missed).
    func trustCopies(_ trusted: Bool) {
        copiesTrusted.withLock { $0 = trusted }
        completedReplies.clear()
    }

    /// Keeps the reply of a completed task relayed from its holder, unless the task changed since
    /// `generation` (`copyGeneration`, taken before the request went out).
    func keepCopy(_ reply: [UInt8], session: String, id: String, generation: UInt64) {
        guard copiesTrusted.withLock({ $0 }) else { return }
        completedReplies.insert(reply, session: session, id: id, generation: generation)
    }

    func copyGeneration(session: String, id: String) -> UInt64 {
        completedReplies.lookup(session: session, id: id).generation
    }

    /// The store notified a change of a stored task (`session/task`), or of a whole session
    /// (`session/`): copies of their replies are dropped.
    func tasksChanged(_ key: String) {
        guard let slash = key.lastIndex(of: "/") else { return }
        let session = String(key[..<slash]), id = String(key[key.index(after: slash)...])
        completedReplies.invalidate(session: session, id: id.isEmpty ? nil : id)
    }

    /// Cluster mode: the deadline the engine holds writes to files to, which the leases' renewals
    /// move (nil on one node).
    var writeFence: WriteFence? { engine.fence }

    /// Whether this replica holds `identifier` in memory.
    func holds(_ identifier: String) -> Bool { registry.session(identifier) != nil }

    /// The identifiers of the sessions this replica holds in memory.
    var heldSessions: [String] { registry.all.map(\.identifier) }
}
