import Glibc
import JSON
import Lifecycles
import Reactor
import TransferEngine
import TransferModel
import TransferStore

/// Sessions as clients create, change and invalidate them (`PUT`, `DELETE`, reset, flush). The
/// engine's side of a session's configuration is set up by the caller (`EngineSessions`).
struct SessionKeeper: Sendable {
    let deliveries: Deliveries
    /// Invalidating cancels tasks.
    let control: TaskControl

    private var engine: TransferEngine { control.runner.engine }
    private var journal: TaskJournal { control.runner.journal }
    private var retirement: SessionRetirement { control.runner.retirement }
    private var tenure: ClusterTenure { control.runner.tenure }
    private var registry: SessionRegistry { journal.registry }
    /// `PUT /v1/sessions/{identifier}`: creates (`created` true) or re-attaches. Re-attaching with
    /// another mode is a conflict; a new configuration replaces the old one. An invalidated
    /// session's identifier is free: the old session goes, a new one is created. A generated
    /// delegate secret is returned (once).
    func putSession(_ identifier: String, _ request: TaskCoordinator.SessionRequest, setup: EngineSessions,
                    completion: @escaping @Sendable (Result<(SessionState, created: Bool, secret: String?), Refusal>) -> Void)
    {
        if let existing = registry.session(identifier) {
            let actions = existing.locked { retirement.lifecycleActions(existing, .reattach) }
            if actions?.contains(.createAnew) == true {
                return retirement.remove(existing) { [self] in putSession(identifier, request, setup: setup, completion: completion) }
            }
            guard existing.mode == request.mode else {
                return completion(.failure(Refusal(.conflict, "mode_conflict",
                    "session \(identifier) exists with mode \(existing.mode.rawValue); it cannot be re-attached as \(request.mode.rawValue)")))
            }
            if let refusal = SessionRetirement.refusal(actions, "session \(identifier) is being invalidated") {
                return completion(.failure(refusal))
            }
            let (row, secret) = existing.locked { () -> (StoredSession, String?) in
                existing.configuration = request.configuration
                existing.configurationJSON = request.configurationJSON
                let secret = SessionKeeper.apply(request, to: existing)
                return (existing.storedRow, secret)
            }
            setup.configure(existing, settings: request.settings, cookies: nil)
            journal.persist(existing, [.upsertSession(row)]) { [self] result in
                switch result {
                case .success:
                    deliveries.updateDelegateChannel(existing)
                    completion(.success((existing, false, secret)))
                case .failure(let error): completion(.failure(Refusal.storeFailure(error)))
                }
            }
            return
        }
        let session = SessionState(identifier: identifier, mode: request.mode, configuration: request.configuration,
                                   configurationJSON: request.configurationJSON, createdAt: journal.clock.now())
        let secret = SessionKeeper.apply(request, to: session)
        let row = session.storedRow
        journal.persist(session, [.upsertSession(row)]) { [self] result in
            switch result {
            case .success:
                tenure.announceEphemeral(session, .upsertSession(row))
                setup.configure(session, settings: request.settings, cookies: [])
                registry.insert(session)
                deliveries.updateDelegateChannel(session)
                completion(.success((session, true, secret)))
            case .failure(let error):
                completion(.failure(Refusal.storeFailure(error)))
            }
        }
    }

    /// Sets the session's delegate as the request says (lock held). A re-attach that names the
    /// same delegate without a secret keeps the secret it has; otherwise a generated one is
    /// returned, to be shown once.
    private static func apply(_ request: TaskCoordinator.SessionRequest, to session: SessionState) -> String? {
        guard case .some(let wanted) = request.delegate else { return nil }
        guard var delegate = wanted else {
            session.delegate = nil
            return nil
        }
        if request.delegateSecretGenerated, let current = session.delegate {
            delegate.secret = current.secret
            session.delegate = delegate
            return nil
        }
        session.delegate = delegate
        return request.delegateSecretGenerated ? delegate.secret : nil
    }

    /// `DELETE /v1/sessions/{identifier}`: `finish` lets running tasks complete
    /// (finishTasksAndInvalidate), `cancel` cancels them (invalidateAndCancel). Tasks that were
    /// never started or are suspended cannot finish on their own, so both modes cancel those.
    func invalidate(_ session: SessionState, mode: SessionLifecycle.InvalidateMode,
                    completion: @escaping @Sendable (Result<Void, Refusal>) -> Void)
    {
        let (row, toCancel): (StoredSession?, [TaskEntry]) = session.locked {
            var row: StoredSession?
            var cancel: [TaskEntry] = []
            for action in retirement.lifecycleActions(session, .invalidate(mode)) ?? [] {
                switch action {
                case .writeSession:
                    row = session.storedRow
                case .cancelTasks(let scope):
                    cancel = session.tasks.values.filter {
                        !$0.lifecycle.isDeleted && !$0.record.isCompleted && (scope == .all || $0.record.state == .suspended)
                    }
                default:
                    break
                }
            }
            return (row, cancel)
        }
        // Invalidated already, or being stored so: nothing is left to write or cancel.
        guard let row else {
            completion(.success(()))
            return retirement.checkInvalidation(session)
        }
        journal.persist(session, [.upsertSession(row)]) { [self] result in
            if case .failure(let error) = result { return completion(.failure(Refusal.storeFailure(error))) }
            for entry in toCancel { control.cancel(entry, in: session, produceResumeData: false) { _ in } }
            completion(.success(()))
            retirement.checkInvalidation(session)
        }
    }

    /// `POST …/reset`: forget cookies (in memory and on disk), the DNS and TLS session caches and
    /// kept-alive connections; `done` once the store forgot the cookies too. Configured
    /// `credentials` stay: they are configuration, changed by a PUT.
    func reset(_ session: SessionState, done: @escaping @Sendable () -> Void) {
        engine.resetSession(session.identifier, done: done)
    }

    /// `POST …/flush`: write the session's cookies out (`done` once stored); future requests go
    /// out on new connections.
    func flush(_ session: SessionState, done: @escaping @Sendable () -> Void) {
        engine.flushSession(session.identifier, done: done)
    }
}
