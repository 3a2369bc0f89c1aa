import Dispatch
import JSON
import Lifecycles
import Reactor
import TransferModel

/// One session in memory. Every mutable field — and its tasks' entries — is owned by the
/// session's serial `executor`: changed only there (each change asserts it), reached from other
/// threads by handing work over (`executor.async`) or, for a caller that needs an answer now,
/// by entering it (`onExecutor`). Tasks of different sessions never contend.
package final class SessionState: @unchecked Sendable {
    package let identifier: String
    package let mode: SessionMode
    package let createdAt: Timestamp
    /// The session's serial executor: it owns everything mutable below, its tasks' entries and
    /// its delegate channel's state; the channel's timers fire on it.
    package let executor = DispatchQueue(label: "transferd.session")
    /// Marks the executor as this session's, so that `onExecutor` knows when it is already there.
    private static let executorKey = DispatchSpecificKey<ObjectIdentifier>()

    // Owned by the executor: a change anywhere else traps.
    package var configuration: SessionConfiguration { didSet { assertOnExecutor() } }
    /// The configuration as the client gave it, stored so a restart re-validates the same input.
    package var configurationJSON: JSONValue { didSet { assertOnExecutor() } }
    /// Active, invalidating or invalidated, and the invalidate mode asked for: the coordinator
    /// reports what happens to it and performs what it answers.
    package var lifecycle = SessionLifecycle() { didSet { assertOnExecutor() } }
    /// When it became invalidated (at start, for one invalidated before): the retention period
    /// counts from here.
    var invalidatedAt: Timestamp? { didSet { assertOnExecutor() } }
    package private(set) var tasks: [String: TaskEntry] = [:]
    /// Idempotency key → task id, for the tasks in memory.
    private var idempotencyIndex: [String: String] = [:]
    /// Ids and idempotency keys of tasks being created, not yet committed.
    var reservedIDs: Set<String> = [] { didSet { assertOnExecutor() } }
    var reservedKeys: Set<String> = [] { didSet { assertOnExecutor() } }
    package var counts: [TaskState: Int] = [:] { didSet { assertOnExecutor() } }
    var nextSequence: Int64 = 1 { didSet { assertOnExecutor() } }

    // Events (owned by the executor).
    package var delegate: Delegate? { didSet { assertOnExecutor() } }
    var numbering = EventNumbering() { didSet { assertOnExecutor() } }
    /// The seq the next event gets.
    var nextEventSeq: Int64 {
        get { numbering.next }
        set { numbering.next = newValue }
    }
    /// The client acknowledged, or the delegate received, every event up to here.
    package var ackedThrough: Int64 = 0 { didSet { assertOnExecutor() } }
    var deliveredThrough: Int64 = 0 { didSet { assertOnExecutor() } }
    /// Listeners to committed events (not owned by the executor: it locks itself).
    package let feed = EventFeed()
    /// Pushes events to the delegate while there is an enabled one.
    var channel: DelegateChannel? { didSet { assertOnExecutor() } }

    /// Busy tasks whose `task.completed` is numbered but whose completion is not yet published
    /// (they still count in `busyCount`): the session is idle when they are all there is.
    var busyTasksEnding = 0 { didSet { assertOnExecutor() } }

    /// Whether a task of this process's life was traced (`traceparent`): only then is a webhook's
    /// task looked up for one, so untraced sessions pay nothing per delivery. Set when a traced
    /// task is reserved, before its first event exists (`createTasks`), and when one is loaded.
    var tracesTasks = false { didSet { assertOnExecutor() } }

    /// Cluster mode: this replica lost the session's lease and forgot it. Whatever of it still
    /// runs (a transfer's end, a retry timer, a late commit) does nothing more.
    var released = false { didSet { assertOnExecutor() } }

    /// Events journaled and not yet acknowledged.
    package var pendingEvents: Int {
        assertOnExecutor()
        return Int(max(0, nextEventSeq - 1 - ackedThrough))
    }

    /// Tasks that keep the session busy: running or being cancelled.
    var busyCount: Int {
        assertOnExecutor()
        return (counts[.running] ?? 0) + (counts[.canceling] ?? 0)
    }

    init(identifier: String, mode: SessionMode, configuration: SessionConfiguration, configurationJSON: JSONValue,
         createdAt: Timestamp)
    {
        self.identifier = identifier
        self.mode = mode
        self.configuration = configuration
        self.configurationJSON = configurationJSON
        self.createdAt = createdAt
        executor.setSpecific(key: Self.executorKey, value: ObjectIdentifier(self))
    }

    /// Runs `body` on the session's executor and returns its answer, for a caller that needs one
    /// now (an HTTP handler reading a task, a transfer's report that must be applied before the
    /// transfer goes on). From the executor itself (its timers, its channel, work handed to it)
    /// `body` runs in place; anywhere else the caller waits for the executor's turn, so `body`
    /// must never wait for a thread that may itself be waiting here. Work that needs no answer
    /// is handed over with `executor.async` instead.
    @inline(__always)
    package func onExecutor<T>(_ body: () throws -> T) rethrows -> T {
        if isOnExecutor { return try body() }
        return try executor.sync(execute: body)
    }

    /// Whether the caller runs on this session's executor (in a work item of its own, or inside
    /// `onExecutor`).
    var isOnExecutor: Bool { DispatchQueue.getSpecific(key: Self.executorKey) == ObjectIdentifier(self) }

    /// Traps unless the caller runs on this session's executor: its state changes nowhere else.
    @inline(__always)
    func assertOnExecutor() {
        dispatchPrecondition(condition: .onQueue(executor))
    }

    /// Traps unless the caller runs on some session's executor: for a task's entry, which does
    /// not know its session.
    static func assertOnAnExecutor() {
        precondition(DispatchQueue.getSpecific(key: executorKey) != nil, "a task's entry is touched off its session's executor")
    }

    /// Adds a task to memory.
    func addTask(_ entry: TaskEntry) {
        assertOnExecutor()
        tasks[entry.record.id] = entry
        if entry.record.traceparent != nil { tracesTasks = true }
        if let key = entry.record.idempotencyKey { idempotencyIndex[key] = entry.record.id }
    }

    /// Drops a task from memory; its counts are the caller's business. The last one
    /// out gives the tables' storage back: a dictionary keeps the capacity of its largest size,
    /// and a session that once held a batch of thousands would keep that for good.
    @discardableResult
    func dropTask(_ id: String) -> TaskEntry? {
        assertOnExecutor()
        guard let entry = tasks.removeValue(forKey: id) else { return nil }
        if let key = entry.record.idempotencyKey { idempotencyIndex[key] = nil }
        if tasks.isEmpty {
            tasks = [:]
            idempotencyIndex = [:]
        }
        return entry
    }

    /// Ends the reservation of tasks being created, committed or not; an emptied set
    /// gives its storage back, as `dropTask` does.
    func endReservation(ids: some Sequence<String>, key: String?) {
        assertOnExecutor()
        for id in ids { reservedIDs.remove(id) }
        if let key { reservedKeys.remove(key) }
        if reservedIDs.isEmpty { reservedIDs = [] }
    }

    /// The task in memory created with this idempotency key.
    func task(withIdempotencyKey key: String) -> TaskEntry? {
        assertOnExecutor()
        return idempotencyIndex[key].flatMap { tasks[$0] }
    }

    /// Moves a task between state counts.
    func count(from old: TaskState?, to new: TaskState?) {
        if let old { counts[old, default: 0] -= 1 }
        if let new { counts[new, default: 0] += 1 }
    }

    /// Tasks that have not completed.
    var unfinishedCount: Int {
        assertOnExecutor()
        return (counts[.running] ?? 0) + (counts[.suspended] ?? 0) + (counts[.canceling] ?? 0)
    }
}
