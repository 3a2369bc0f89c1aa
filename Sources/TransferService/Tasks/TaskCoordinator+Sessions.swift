import Glibc
import HTTPServer
import Reactor
import Store
import TransferEngine

extension TaskCoordinator {
    /// `PUT /v1/sessions/{identifier}`: creates (`created` true) or re-attaches. Re-attaching with
    /// another mode is a conflict; a new configuration replaces the old one.
    func putSession(_ identifier: String, mode: SessionMode, configuration: SessionConfiguration,
                    configurationJSON: JSONValue,
                    completion: @escaping @Sendable (Result<(SessionState, Bool), APIError>) -> Void)
    {
        if let existing = registry.session(identifier) {
            guard existing.mode == mode else {
                return completion(.failure(APIError(409, "mode_conflict",
                    "session \(identifier) exists with mode \(existing.mode.rawValue); it cannot be re-attached as \(mode.rawValue)")))
            }
            guard existing.locked({ existing.lifecycle == .active }) else {
                return completion(.failure(APIError(409, "session_invalidated", "session \(identifier) is being invalidated")))
            }
            let row = existing.locked { () -> StoredSession in
                existing.configuration = configuration
                existing.configurationJSON = configurationJSON
                return storedRow(existing)
            }
            engine.configure(session: identifier, limits: configuration.sessionLimits)
            persist(existing, { try TaskStore.insertSession(row, $0) }) { result in
                switch result {
                case .success: completion(.success((existing, false)))
                case .failure(let error): completion(.failure(APIError.storeFailure(error)))
                }
            }
            return
        }
        let session = SessionState(identifier: identifier, mode: mode, configuration: configuration,
                                   configurationJSON: configurationJSON, createdAt: Timestamp.now())
        let row = storedRow(session)
        persist(session, { try TaskStore.insertSession(row, $0) }) { [self] result in
            switch result {
            case .success:
                engine.configure(session: identifier, limits: configuration.sessionLimits)
                registry.insert(session)
                completion(.success((session, true)))
            case .failure(let error):
                completion(.failure(APIError.storeFailure(error)))
            }
        }
    }

    func storedRow(_ session: SessionState) -> StoredSession {
        var json = JSONWriter()
        json.value(session.configurationJSON)
        return StoredSession(identifier: session.identifier, mode: session.mode.rawValue,
                             configuration: String(decoding: json.bytes, as: UTF8.self), delegate: nil,
                             lifecycle: session.lifecycle.rawValue, invalidateMode: session.invalidateMode?.rawValue,
                             createdAt: session.createdAt.milliseconds)
    }

    /// `DELETE /v1/sessions/{identifier}`: `finish` lets running tasks complete
    /// (finishTasksAndInvalidate), `cancel` cancels them (invalidateAndCancel). Tasks that were
    /// never started or are suspended cannot finish on their own, so both modes cancel those.
    func invalidate(_ session: SessionState, mode: SessionState.InvalidateMode,
                    completion: @escaping @Sendable (Result<Void, APIError>) -> Void)
    {
        let (row, toCancel): (StoredSession, [TaskEntry]) = session.locked {
            if session.lifecycle == .active {
                session.lifecycle = .invalidating
                session.invalidateMode = mode
            } else if mode == .cancel {
                session.invalidateMode = .cancel
            }
            let cancel = session.tasks.values.filter {
                !$0.deleted && !$0.record.isCompleted && (mode == .cancel || $0.record.state == .suspended)
            }
            return (storedRow(session), cancel)
        }
        persist(session, { try TaskStore.insertSession(row, $0) }) { [self] result in
            if case .failure(let error) = result { return completion(.failure(APIError.storeFailure(error))) }
            for entry in toCancel { cancel(entry, in: session, produceResumeData: false) { _ in } }
            completion(.success(()))
            checkInvalidation(session)
        }
    }

    /// Once an invalidating session has no unfinished task, it is gone: its rows, its files, its
    /// engine state. The identifier is free again.
    func checkInvalidation(_ session: SessionState) {
        let done = session.locked { () -> Bool in
            guard session.lifecycle == .invalidating, session.unfinishedCount == 0, session.reservedIDs.isEmpty else { return false }
            session.lifecycle = .invalidated
            return true
        }
        guard done else { return }
        registry.remove(session)
        engine.removeSession(session.identifier)
        let ownedBlobs = Locked<[String]>([])
        persist(session, { db in
            let ids = try TaskStore.deleteSession(session.identifier, db)
            ownedBlobs.withLock { $0 = ids }
        }) { [self] _ in
            let directory = layout.sessionDirectory(session.identifier)
            let blobFiles = ownedBlobs.withLock { $0 }.compactMap { blobs?.path($0) }
            fileWork.async {
                DataLayout.removeTree(directory)
                for path in blobFiles { unlink(path) }
            }
            logger.info("session invalidated", metadata: ["session": .string(session.identifier)])
        }
    }

    /// `POST …/reset`: forget cookies and the DNS and TLS session caches.
    func reset(_ session: SessionState) {
        engine.resetSession(session.identifier)
    }

    /// `POST …/flush`: future requests of the session go out on new connections.
    func flush(_ session: SessionState) {
        engine.flushSession(session.identifier)
    }
}

extension SessionConfiguration {
    var sessionLimits: SessionLimits {
        SessionLimits(maxConcurrentTasks: maxConcurrentTasks, maxConnectionsPerHost: maxConnectionsPerHost)
    }
}

extension APIError {
    static func storeFailure(_ error: Error) -> APIError {
        APIError(503, "store_unavailable", "the change could not be stored: \(error)")
    }
}
