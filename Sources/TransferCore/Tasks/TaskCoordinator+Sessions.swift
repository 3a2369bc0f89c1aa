import Glibc
import JSON
import Lifecycles
import Reactor
import TransferEngine
import TransferModel
import TransferStore
import TransferVocabulary

extension TaskCoordinator {
    /// What a session PUT asks for.
    package struct SessionRequest: Sendable {
        var mode: SessionMode
        var configuration: SessionConfiguration
        var configurationJSON: JSONValue
        /// The configuration as the engine applies it (TLS files already read).
        var settings: SessionSettings
        /// nil: keep what the session has; `.some(nil)`: remove it; `.some(d)`: set it.
        var delegate: Delegate??
        /// The request named no secret (one is kept or generated).
        var delegateSecretGenerated: Bool

        package init(mode: SessionMode, configuration: SessionConfiguration, configurationJSON: JSONValue, settings: SessionSettings, delegate: Delegate?? = nil, delegateSecretGenerated: Bool) {
            self.mode = mode
            self.configuration = configuration
            self.configurationJSON = configurationJSON
            self.settings = settings
            self.delegate = delegate
            self.delegateSecretGenerated = delegateSecretGenerated
        }
    }

    /// `PUT /v1/sessions/{identifier}`: creates (`created` true) or re-attaches. Re-attaching with
    /// another mode is a conflict; a new configuration replaces the old one. An invalidated
    /// session's identifier is free: the old session goes, a new one is created. A generated
    /// delegate secret is returned (once).
    package func putSession(_ identifier: String, _ request: SessionRequest,
                    completion: @escaping @Sendable (Result<(SessionState, created: Bool, secret: String?), Refusal>) -> Void)
    {
        if let existing = registry.session(identifier) {
            let actions = existing.locked { lifecycleActions(existing, .reattach) }
            if actions?.contains(.createAnew) == true {
                return remove(existing) { [self] in putSession(identifier, request, completion: completion) }
            }
            guard existing.mode == request.mode else {
                return completion(.failure(Refusal(.conflict, "mode_conflict",
                    "session \(identifier) exists with mode \(existing.mode.rawValue); it cannot be re-attached as \(request.mode.rawValue)")))
            }
            if let refusal = TaskCoordinator.refusal(actions, "session \(identifier) is being invalidated") {
                return completion(.failure(refusal))
            }
            let (row, secret) = existing.locked { () -> (StoredSession, String?) in
                existing.configuration = request.configuration
                existing.configurationJSON = request.configurationJSON
                let secret = TaskCoordinator.apply(request, to: existing)
                return (storedRow(existing), secret)
            }
            engineSessions.configure(existing, settings: request.settings, cookies: nil)
            persist(existing, [.upsertSession(row)]) { [self] result in
                switch result {
                case .success:
                    updateDelegateChannel(existing)
                    completion(.success((existing, false, secret)))
                case .failure(let error): completion(.failure(Refusal.storeFailure(error)))
                }
            }
            return
        }
        let session = SessionState(identifier: identifier, mode: request.mode, configuration: request.configuration,
                                   configurationJSON: request.configurationJSON, createdAt: Timestamp.now())
        let secret = TaskCoordinator.apply(request, to: session)
        let row = storedRow(session)
        persist(session, [.upsertSession(row)]) { [self] result in
            switch result {
            case .success:
                announceEphemeral(session, .upsertSession(row))
                engineSessions.configure(session, settings: request.settings, cookies: [])
                registry.insert(session)
                updateDelegateChannel(session)
                completion(.success((session, true, secret)))
            case .failure(let error):
                completion(.failure(Refusal.storeFailure(error)))
            }
        }
    }

    /// Sets the session's delegate as the request says (lock held). A re-attach that names the
    /// same delegate without a secret keeps the secret it has; otherwise a generated one is
    /// returned, to be shown once.
    private static func apply(_ request: SessionRequest, to session: SessionState) -> String? {
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

    func storedRow(_ session: SessionState) -> StoredSession {
        var json = JSONWriter()
        json.value(session.configurationJSON)
        return StoredSession(identifier: session.identifier, mode: session.mode.rawValue,
                             configuration: String(decoding: json.bytes, as: UTF8.self), delegate: session.delegate?.stored,
                             lifecycle: session.lifecycle.status.rawValue, invalidateMode: session.lifecycle.invalidateMode?.rawValue,
                             createdAt: session.createdAt.milliseconds)
    }

    /// `DELETE /v1/sessions/{identifier}`: `finish` lets running tasks complete
    /// (finishTasksAndInvalidate), `cancel` cancels them (invalidateAndCancel). Tasks that were
    /// never started or are suspended cannot finish on their own, so both modes cancel those.
    package func invalidate(_ session: SessionState, mode: SessionLifecycle.InvalidateMode,
                    completion: @escaping @Sendable (Result<Void, Refusal>) -> Void)
    {
        let (row, toCancel): (StoredSession?, [TaskEntry]) = session.locked {
            var row: StoredSession?
            var cancel: [TaskEntry] = []
            for action in lifecycleActions(session, .invalidate(mode)) ?? [] {
                switch action {
                case .writeSession:
                    row = storedRow(session)
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
            return checkInvalidation(session)
        }
        persist(session, [.upsertSession(row)]) { [self] result in
            if case .failure(let error) = result { return completion(.failure(Refusal.storeFailure(error))) }
            for entry in toCancel { cancel(entry, in: session, produceResumeData: false) { _ in } }
            completion(.success(()))
            checkInvalidation(session)
        }
    }

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
                var row = session.locked { storedRow(session) }
                row.lifecycle = SessionLifecycle.Status.invalidated.rawValue
                persist(session, events: [EventDraft(.sessionInvalidated, task: nil)], [.upsertSession(row)]) { [self] _ in
                    let removing: Bool = session.locked {
                        session.invalidatedAt = Timestamp.now()
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
        engine.removeSession(TaskCoordinator.deliverySession(session.identifier))
        session.locked { session.delegate = nil }
        updateDelegateChannel(session)
        persist(session, [.deleteSession(session.identifier)]) { [self] result in
            announceEphemeral(session, .deleteSession(session.identifier))
            completedReplies.invalidate(session: session.identifier)
            let directory = layout.sessionDirectory(session.identifier)
            let blobFiles = ((try? result.get())?.removedBlobs ?? []).compactMap { blobs?.path($0) }
            fileWork.async {
                DataLayout.removeTree(directory)
                for path in blobFiles { unlink(path) }
                then()
            }
        }
    }

    /// `POST …/reset`: forget cookies (in memory and on disk), the DNS and TLS session caches and
    /// kept-alive connections; `done` once the store forgot the cookies too. Configured
    /// `credentials` stay: they are configuration, changed by a PUT.
    package func reset(_ session: SessionState, done: @escaping @Sendable () -> Void) {
        engine.resetSession(session.identifier, done: done)
    }

    /// `POST …/flush`: write the session's cookies out (`done` once stored); future requests go
    /// out on new connections.
    package func flush(_ session: SessionState, done: @escaping @Sendable () -> Void) {
        engine.flushSession(session.identifier, done: done)
    }
}

extension Refusal {
    package static func storeFailure(_ error: Error) -> Refusal {
        Refusal(.unavailable, "store_unavailable", "the store cannot be read or written now (\(error)); nothing was changed, retry shortly")
    }
}
