import Dispatch
import Glibc
import Lifecycles
import Logging
import TransferEngine
import TransferModel
import TransferStore

/// The end of a session: invalidated once its tasks have settled, removed for good (rows, events,
/// files, engine state) once its events are acknowledged, its identifier used again, or its
/// retention run out. Its lifecycle decides; this performs what it says.
struct SessionRetirement: Sendable {
    let engine: TransferEngine
    let journal: TaskJournal
    /// A removed session's directory and blobs go.
    let files: TaskFiles
    /// An ephemeral session's row leaves the shared store with it.
    let tenure: ClusterTenure
    let completedReplies: CompletedReplyCache

    private var registry: SessionRegistry { journal.registry }
    private var clock: any ServiceClock { journal.clock }
    private var logger: Logger { journal.logger }

    /// Once an invalidating session has no unfinished task, it is invalidated: `session.invalidated`
    /// is journaled and it takes nothing new. It stays (readable, its events deliverable) until its
    /// identifier is used again or its events are all acknowledged.
    func checkInvalidation(_ session: SessionState) {
        let actions: [SessionLifecycle.Action] = session.locked {
            guard session.unfinishedCount == 0, session.reservedIDs.isEmpty else { return [] }
            return lifecycleActions(session, .tasksSettled) ?? []
        }
        for action in actions {
            switch action {
            case .leaveEngine:
                engine.removeSession(session.identifier)
            case .writeInvalidated:
                var row = session.locked { session.storedRow }
                row.lifecycle = SessionLifecycle.Status.invalidated.rawValue
                journal.persist(session, events: [EventDraft(.sessionInvalidated, task: nil)], [.upsertSession(row)]) { [self] _ in
                    let removing: Bool = session.locked {
                        session.invalidatedAt = clock.now()
                        let stored = lifecycleActions(session, .invalidationStored(eventsPending: session.pendingEvents > 0))
                        return stored?.contains(.remove) == true
                    }
                    logger.info("session invalidated", metadata: ["session": .string(session.identifier)])
                    if removing { remove(session) {} }
                }
            default:
                break
            }
        }
    }

    /// An invalidated session whose events have all been acknowledged (or delivered) is removed.
    func removeIfSettled(_ session: SessionState) {
        let settled = session.locked {
            session.pendingEvents == 0 && lifecycleActions(session, .eventsAcknowledged)?.contains(.remove) == true
        }
        if settled { remove(session) {} }
    }

    /// Tells the session's lifecycle what happened and returns what to do (lock held); nil when it
    /// cannot take the event where it is. That is only ever late news for a removed session — a
    /// delivery saved, an acknowledgement, a request that found it just before it went — and
    /// changes nothing.
    func lifecycleActions(_ session: SessionState, _ event: SessionLifecycle.Event) -> [SessionLifecycle.Action]? {
        switch session.lifecycle.handle(event) {
        case .perform(let actions): actions
        case .invalid: nil
        }
    }

    /// The 409 for a request the session's lifecycle refuses; a removed session refuses too.
    static func refusal(_ actions: [SessionLifecycle.Action]?, _ message: String) -> Refusal? {
        guard let actions else { return Refusal(.conflict, SessionLifecycle.Refusal.sessionInvalidated.rawValue, message) }
        for case .refuse(let refusal) in actions { return Refusal(.conflict, refusal.rawValue, message) }
        return nil
    }

    /// Removes a session for good: rows, events, files, engine state.
    func remove(_ session: SessionState, then: @escaping @Sendable () -> Void) {
        registry.remove(session)
        engine.removeSession(session.identifier)
        engine.removeSession(Deliveries.deliverySession(session.identifier))
        session.withdrawDelegate()
        journal.persist(session, [.deleteSession(session.identifier)]) { [self] result in
            tenure.announceEphemeral(session, .deleteSession(session.identifier))
            completedReplies.invalidate(session: session.identifier)
            let directory = files.layout.sessionDirectory(session.identifier)
            let blobFiles = ((try? result.get())?.removedBlobs ?? []).compactMap { files.blobs?.path($0) }
            files.fileWork.async {
                DataLayout.removeTree(directory)
                for path in blobFiles { unlink(path) }
                then()
            }
        }
    }
}
