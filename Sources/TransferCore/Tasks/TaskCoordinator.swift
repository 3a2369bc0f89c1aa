import Digests
import Dispatch
import Lifecycles
import Logging
import Reactor
import TransferEngine
import TransferModel
import TransferStore

/// The service core as the API sees it: a façade over rooms that each own one job — the journal
/// (`TaskJournal`), task files (`TaskFiles`), the runner (`TaskRunner`, `TaskControl`,
/// `TaskCreation`), long-polls (`LongPolls`), deliveries (`Deliveries`), sessions
/// (`SessionKeeper`, `SessionRecovery`, `SessionRetirement`) and cluster tenure (`ClusterTenure`).
/// It wires them once and keeps the method names the API calls.
package final class TaskCoordinator: Sendable {
    /// Timers of the service, on a loop of their own: the API's, and the core's through `time`.
    package let clock: EventLoop
    /// Blocking file work (fsync, rename, hashing) happens here, never on an event loop.
    package let fileWork = DispatchQueue(label: "transferd.files", attributes: .concurrent)

    let runner: TaskRunner
    let control: TaskControl
    let creation: TaskCreation
    let waits: LongPolls
    let deliveries: Deliveries
    let sessions: SessionKeeper
    let recovery: SessionRecovery
    /// Sessions' settings and cookie jars in the engine.
    let engineSessions: EngineSessions

    package struct Limits: Sendable {
        /// Largest response body a data task may keep.
        var maxDataBodyBytes: Int64 = 64 << 20
        /// Longest `?wait=` a client may ask for.
        package var maxWaitSeconds: Double = 600
        /// Delays before each webhook attempt (the first is immediate); when they run out the
        /// delegate is disabled: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h.
        var webhookSchedule: [Double] = [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
        /// What a download computes when it does not say (`--default-digests`).
        var defaultDigests: [DigestAlgorithm] = DigestAlgorithm.defaults

        package init(maxDataBodyBytes: Int64 = 64 << 20, maxWaitSeconds: Double = 600, webhookSchedule: [Double] = [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400],
                     defaultDigests: [DigestAlgorithm] = DigestAlgorithm.defaults)
        {
            self.maxDataBodyBytes = maxDataBodyBytes
            self.maxWaitSeconds = maxWaitSeconds
            self.webhookSchedule = webhookSchedule
            self.defaultDigests = defaultDigests
        }
    }

    /// `time`: the core's clock; by default the system's, with timers on `clock`.
    package init(store: any TransferStore, blobs: BlobStore?, engine: TransferEngine, layout: DataLayout, allowedRoots: AllowedRoots,
                 limits: Limits, resumeKey: [UInt8], logger: Logger, metrics: ServiceMetrics = ServiceMetrics(),
                 time: (any ServiceClock)? = nil)
    {
        clock = EventLoop(name: "service-timers")
        clock.start()
        let time = time ?? LoopClock(loop: clock)
        let registry = SessionRegistry(), completedReplies = CompletedReplyCache()
        let journal = TaskJournal(store: store, registry: registry, clock: time, logger: logger)
        let files = TaskFiles(layout: layout, allowedRoots: allowedRoots, blobs: blobs, resumeKey: resumeKey,
                              maxBodyBytes: limits.maxDataBodyBytes, fileWork: fileWork, journal: journal, logger: logger)
        let tenure = ClusterTenure(store: store, registry: registry, engine: engine, completedReplies: completedReplies, clock: time,
                                   logger: logger)
        let retirement = SessionRetirement(engine: engine, journal: journal, files: files, tenure: tenure,
                                           completedReplies: completedReplies)
        deliveries = Deliveries(engine: engine, journal: journal, retirement: retirement, metrics: metrics, clock: time,
                                logger: logger, schedule: limits.webhookSchedule)
        runner = TaskRunner(engine: engine, journal: journal, files: files, retirement: retirement, tenure: tenure, limits: limits,
                            metrics: metrics, heapTrimmer: HeapTrimmer())
        control = TaskControl(runner: runner, completedReplies: completedReplies)
        creation = TaskCreation(runner: runner, defaultDigests: limits.defaultDigests)
        waits = LongPolls(journal: journal, clock: time, reads: fileWork)
        sessions = SessionKeeper(deliveries: deliveries, control: control)
        recovery = SessionRecovery(journal: journal, runner: runner, deliveries: deliveries)
        engineSessions = EngineSessions(engine: engine, store: store, roots: allowedRoots, logger: logger)
    }

    // What the rooms own, as the API and the façade's own files reach it.
    package var registry: SessionRegistry { journal.registry }
    package var engine: TransferEngine { runner.engine }
    package var limits: Limits { runner.limits }
    package var metrics: ServiceMetrics { runner.metrics }
    package var blobs: BlobStore? { files.blobs }
    package var allowedRoots: AllowedRoots { files.allowedRoots }
    /// Where durable sessions are kept (SQLite, in the service).
    var store: any TransferStore { journal.store }
    var logger: Logger { journal.logger }
    /// Encodings of completed tasks read lately (a durable session's are not in memory).
    var completedReplies: CompletedReplyCache { control.completedReplies }
    var heapTrimmer: HeapTrimmer { runner.heapTrimmer }
    var journal: TaskJournal { runner.journal }
    var files: TaskFiles { runner.files }
    var tenure: ClusterTenure { runner.tenure }
    var retirement: SessionRetirement { runner.retirement }
    /// Time as the core's rooms see it (a fake one in tests).
    var time: any ServiceClock { journal.clock }

    /// Answers every long-poll now with what there is (and any new one at once): the first step
    /// of a shutdown, so their clients get an answer before connections close.
    package func endWaits() { waits.end() }

    package func shutdown() {
        recovery.interruptDefaultTasksAtRest()
        // Webhook bookkeeping waiting for its batch is stored while the store is still open.
        // The channels then leave their sessions: nothing more is delivered, and a channel no
        // longer holds the rooms that hold its session.
        for session in registry.all {
            session.locked { () -> DelegateChannel? in
                defer { session.channel = nil }
                return session.channel
            }?.saveNow()
        }
        clock.stopAndJoin()
    }

    /// The store that keeps `session`: its mode decides.
    func store(of session: SessionState) -> any TransferStore { journal.store(of: session) }

    // MARK: sessions

    /// `PUT /v1/sessions/{identifier}`: creates (`created` true) or re-attaches.
    package func putSession(_ identifier: String, _ request: SessionRequest,
                            completion: @escaping @Sendable (Result<(SessionState, created: Bool, secret: String?), Refusal>) -> Void)
    {
        sessions.putSession(identifier, request, setup: engineSessions, completion: completion)
    }

    package func invalidate(_ session: SessionState, mode: SessionLifecycle.InvalidateMode,
                            completion: @escaping @Sendable (Result<Void, Refusal>) -> Void)
    {
        sessions.invalidate(session, mode: mode, completion: completion)
    }

    package func reset(_ session: SessionState, done: @escaping @Sendable () -> Void) { sessions.reset(session, done: done) }
    package func flush(_ session: SessionState, done: @escaping @Sendable () -> Void) { sessions.flush(session, done: done) }

    /// Start-up: sessions and unfinished tasks come back from the store.
    package func recover() throws { try recovery.recover(setup: engineSessions) }

    /// Cluster mode: this replica took the leases of `identifiers`; returns those adopted.
    @discardableResult
    package func adopt(_ identifiers: [String]) throws -> [String] { try recovery.adopt(identifiers, setup: engineSessions) }

    // MARK: lookups

    package func session(_ identifier: String) throws(Refusal) -> SessionState {
        guard let session = registry.session(identifier) else { throw Refusal.notFound("session \(identifier)") }
        return session
    }

    // MARK: tasks

    package func createTasks(in session: SessionState, _ requests: [TaskCreationRequest], idempotency: IdempotencyClaim?,
                             completion: @escaping @Sendable (Result<CreationOutcome, Refusal>) -> Void)
    {
        creation.createTasks(in: session, requests, idempotency: idempotency, completion: completion)
    }

    package func replay(in session: SessionState, _ claim: IdempotencyClaim,
                        answer: @escaping @Sendable (Result<CreationOutcome?, Refusal>) -> Void)
    {
        creation.replay(in: session, claim, answer: answer)
    }

    package func resolveResumeData(_ requests: inout [TaskCreationRequest]) throws(Refusal) {
        try creation.resolveResumeData(&requests)
    }

    package func checkDestinations(_ requests: [TaskCreationRequest], roots: AllowedRoots) throws(Refusal) {
        try creation.checkDestinations(requests, roots: roots)
    }

    package func checkBodySources(_ requests: [TaskCreationRequest], in session: SessionState, roots: AllowedRoots,
                                  blobOwner: String?) throws(Refusal)
    {
        try files.checkBodySources(requests, in: session, roots: roots, blobOwner: blobOwner)
    }

    package func waitForTask(_ session: SessionState, _ id: String, seconds: Double,
                             completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void)
    {
        waits.waitForTask(session, id, seconds: seconds, completion: completion)
    }

    package func resume(_ session: SessionState, _ id: String, completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void) {
        control.resume(session, id, completion: completion)
    }

    package func suspend(_ session: SessionState, _ id: String, completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void) {
        control.suspend(session, id, completion: completion)
    }

    package func cancel(_ session: SessionState, _ id: String, produceResumeData: Bool,
                        completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void)
    {
        control.cancel(session, id, produceResumeData: produceResumeData, completion: completion)
    }

    package func update(_ session: SessionState, _ id: String, priority: Double?, description: String??,
                        completion: @escaping @Sendable (Result<TaskRecord, Refusal>) -> Void)
    {
        control.update(session, id, priority: priority, description: description, completion: completion)
    }

    package func delete(_ session: SessionState, _ id: String, completion: @escaping @Sendable (Result<Void, Refusal>) -> Void) {
        control.delete(session, id, completion: completion)
    }

    package func blob(_ id: String) throws(Refusal) -> Blob { try files.blob(id) }

    /// `blob(_:)` for a caller on an event loop: read on the store's readers, answered there.
    package func blob(_ id: String, answer: @escaping @Sendable (Result<Blob, Refusal>) -> Void) {
        onReaders { [self] in answer(Result { () throws(Refusal) in try blob(id) }) }
    }

    package func deleteBlob(_ blob: Blob, completion: @escaping @Sendable (Result<Void, Refusal>) -> Void) {
        files.deleteBlob(blob, completion: completion)
    }

    // MARK: events and deliveries

    package func events(of session: SessionState, after seq: Int64, limit: Int) throws(Refusal) -> [Event] {
        try journal.events(of: session, after: seq, limit: limit)
    }

    package func waitForEvents(_ session: SessionState, after seq: Int64, limit: Int, seconds: Double,
                               completion: @escaping @Sendable (Result<[Event], Refusal>) -> Void)
    {
        waits.waitForEvents(session, after: seq, limit: limit, seconds: seconds, completion: completion)
    }

    package func acknowledge(_ session: SessionState, through seq: Int64, completion: @escaping @Sendable (Result<Void, Refusal>) -> Void) {
        deliveries.acknowledge(session, through: seq, completion: completion)
    }

    package struct DeliveryPage: Sendable {
        package let rows: [(Int64, DeliveryAttempt)]
        package let next: Int64?
    }

    /// `GET …/deliveries`: webhook attempts in the order they were made, read on the store's readers.
    package func deliveries(_ session: SessionState, after row: Int64, limit: Int,
                            answer: @escaping @Sendable (Result<DeliveryPage, Refusal>) -> Void)
    {
        deliveries.page(session, after: row, limit: limit, answer: answer)
    }

    /// `POST …/events/{event}/redeliver`; `queued` runs once the event, read on the store's
    /// readers, is queued.
    package func redeliver(_ session: SessionState, eventID: String,
                           queued: @escaping @Sendable (Result<Void, Refusal>) -> Void) throws(Refusal)
    {
        try deliveries.redeliver(session, eventID: eventID, queued: queued)
    }

    /// Once a second, `task.progress` for the tasks someone listens to (live only).
    package func startProgressEvents() { journal.startProgressEvents() }

    /// Every few seconds, running tasks' progress goes to the store in one transaction.
    package func startProgressFlushing(every seconds: Double = 5) { journal.startProgressFlushing(every: seconds) }

    package func collectMetrics() { metrics.collect(from: registry, engine: engine, dataDirectory: files.layout.root) }

    // MARK: cluster tenure

    package var sharesStore: Bool {
        get { tenure.sharesStore.load(ordering: .relaxed) }
        set { tenure.sharesStore.store(newValue, ordering: .relaxed) }
    }

    package func release(_ identifier: String) { tenure.release(identifier) }
    package func listedSessions() throws(Refusal) -> [SessionState] { try tenure.listedSessions() }
    package func sessionForReading(_ identifier: String) throws(Refusal) -> SessionState { try tenure.sessionForReading(identifier) }
    package func readsEventsHere(_ identifier: String) -> Bool { tenure.readsEventsHere(identifier) }
    package func eventsCommitted(_ identifier: String?) { tenure.eventsCommitted(identifier) }
    func countsHeldElsewhere(where visible: (String) -> Bool) -> [TaskState: Int] { tenure.countsHeldElsewhere(where: visible) }
    package func completedCopy(session: String, id: String) -> [UInt8]? { tenure.completedCopy(session: session, id: id) }
    package func trustCopies(_ trusted: Bool) { tenure.trustCopies(trusted) }
    package func keepCopy(_ reply: [UInt8], session: String, id: String, generation: UInt64) {
        tenure.keepCopy(reply, session: session, id: id, generation: generation)
    }
    package func copyGeneration(session: String, id: String) -> UInt64 { tenure.copyGeneration(session: session, id: id) }
    package func tasksChanged(_ key: String) { tenure.tasksChanged(key) }
    package var writeFence: WriteFence? { tenure.writeFence }
    package func holds(_ identifier: String) -> Bool { tenure.holds(identifier) }
    package var heldSessions: [String] { tenure.heldSessions }
}
