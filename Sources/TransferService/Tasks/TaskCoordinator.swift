import Dispatch
import Logging
import Reactor
import Store
import TransferEngine

/// The service core's centre: sessions and tasks in memory (the registry), their durable copy
/// (the store), and their transfers (the engine). API handlers call it; the engine reports back
/// to it; it keeps the three consistent.
///
/// Ordering rule: a change that a reply or an event promises is committed to the store before it
/// becomes visible in memory (and before the reply), so nothing a client was told is lost by a crash.
final class TaskCoordinator: @unchecked Sendable {
    let registry = SessionRegistry()
    let store: TaskStore?
    let blobs: BlobStore?
    let engine: TransferEngine
    let layout: DataLayout
    let allowedRoots: AllowedRoots
    let limits: Limits
    let logger: Logger
    /// Timers of the service (long-poll deadlines), on a loop of their own.
    let clock: EventLoop
    /// Blocking file work (fsync, rename, hashing) happens here, never on an event loop.
    let fileWork = DispatchQueue(label: "transferd.files", attributes: .concurrent)

    struct Limits: Sendable {
        /// Largest response body a data task may keep.
        var maxDataBodyBytes: Int64 = 64 << 20
        /// Longest `?wait=` a client may ask for.
        var maxWaitSeconds: Double = 600
    }

    init(store: TaskStore?, blobs: BlobStore?, engine: TransferEngine, layout: DataLayout, allowedRoots: AllowedRoots,
         limits: Limits, logger: Logger)
    {
        self.store = store
        self.blobs = blobs
        self.engine = engine
        self.layout = layout
        self.allowedRoots = allowedRoots
        self.limits = limits
        self.logger = logger
        clock = EventLoop(name: "service-timers")
        clock.start()
    }

    func shutdown() {
        clock.stopAndJoin()
    }

    // MARK: persistence

    /// Runs `work` in the next group commit for a durable session, then `then`; for an ephemeral
    /// session there is nothing to write and `then` runs at once.
    func persist(_ session: SessionState, _ work: @escaping (Database) throws -> Void,
                 then: @escaping @Sendable (Result<Void, Error>) -> Void)
    {
        guard session.mode.isDurable, let store else { return then(.success(())) }
        store.writer.submit(work, completion: then)
    }

    /// Stores a task's new record (with `also`, in the same transaction), then publishes it.
    func commit(_ record: TaskRecord, of entry: TaskEntry, in session: SessionState,
                also: ((Database) throws -> Void)? = nil, then: (@Sendable () -> Void)? = nil)
    {
        persist(session, { db in
            try TaskStore.updateTask(record, db)
            try also?(db)
        }) { [self] result in
            if case .failure(let error) = result {
                logger.error("cannot store task", metadata: ["task": "\(session.identifier)/\(record.id)", "error": "\(error)"])
            }
            publish(record, of: entry, in: session)
            then?()
        }
    }

    /// Makes `record` the current state of `entry`, keeping counts and waking long-polls.
    func publish(_ record: TaskRecord, of entry: TaskEntry, in session: SessionState) {
        let waiters: [@Sendable (TaskRecord) -> Void] = session.locked {
            session.count(from: entry.record.state, to: record.state)
            entry.record = record
            guard record.isCompleted else { return [] }
            defer { entry.completionWaiters = [] }
            return entry.completionWaiters
        }
        for waiter in waiters { waiter(record) }
        if record.isCompleted {
            registry.noteCompleted(session, taskID: record.id)
            checkInvalidation(session)
        }
    }

    // MARK: lookups

    func session(_ identifier: String) throws(APIError) -> SessionState {
        guard let session = registry.session(identifier) else { throw APIError.notFound("session \(identifier)") }
        return session
    }

    /// The task's current record: from memory, or for a durable session's completed task that was
    /// dropped from memory, from the store.
    func record(_ session: SessionState, _ id: String) throws(APIError) -> TaskRecord {
        if let snapshot = session.locked({ session.tasks[id].flatMap { $0.deleted ? nil : $0.snapshot } }) {
            return snapshot
        }
        if session.mode.isDurable, let store, let stored = try? store.loadTask(session: session.identifier, id: id) {
            return stored
        }
        throw APIError.notFound("task \(id)")
    }

    /// The task object as the API returns it, encoded (cached for tasks that are not moving).
    func taskJSON(_ session: SessionState, _ id: String) throws(APIError) -> [UInt8] {
        if let bytes = session.locked({ session.tasks[id].flatMap { $0.deleted ? nil : $0.json } }) { return bytes }
        return try record(session, id).jsonBytes()
    }

    /// The in-memory entry of a task that has not completed (every such task is in memory).
    func liveEntry(_ session: SessionState, _ id: String) -> TaskEntry? {
        session.locked { session.tasks[id].flatMap { $0.deleted ? nil : $0 } }
    }
}
