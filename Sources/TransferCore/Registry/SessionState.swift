import Dispatch
import JSON
import Lifecycles
import Reactor
import TransferModel

/// One session in memory. Every mutable field is guarded by `lock`; tasks of different sessions
/// never contend.
package final class SessionState: @unchecked Sendable {
    package let identifier: String
    package let mode: SessionMode
    package let createdAt: Timestamp
    private let mutex = Lock()

    // Guarded by the lock.
    package var configuration: SessionConfiguration
    /// The configuration as the client gave it, stored so a restart re-validates the same input.
    package var configurationJSON: JSONValue
    /// Active, invalidating or invalidated, and the invalidate mode asked for: the coordinator
    /// reports what happens to it and performs what it answers.
    package var lifecycle = SessionLifecycle()
    /// When it became invalidated (at start, for one invalidated before): the retention period
    /// counts from here.
    var invalidatedAt: Timestamp?
    package private(set) var tasks: [String: TaskEntry] = [:]
    /// Idempotency key → task id, for the tasks in memory.
    private var idempotencyIndex: [String: String] = [:]
    /// Ids and idempotency keys of tasks being created, not yet committed.
    var reservedIDs: Set<String> = []
    var reservedKeys: Set<String> = []
    package var counts: [TaskState: Int] = [:]
    var nextSequence: Int64 = 1

    // Events (guarded by the lock).
    package var delegate: Delegate?
    var numbering = EventNumbering()
    /// The seq the next event gets.
    var nextEventSeq: Int64 {
        get { numbering.next }
        set { numbering.next = newValue }
    }
    /// The client acknowledged, or the delegate received, every event up to here.
    package var ackedThrough: Int64 = 0
    var deliveredThrough: Int64 = 0
    /// Listeners to committed events (not guarded: it locks itself).
    package let feed = EventFeed()
    /// Pushes events to the delegate while there is an enabled one.
    var channel: DelegateChannel?
    /// The session's serial executor: its delegate channels' state is confined to it (not
    /// guarded by the lock), and their timers fire on it.
    let executor = DispatchQueue(label: "transferd.session")

    /// Busy tasks whose `task.completed` is numbered but whose completion is not yet published
    /// (they still count in `busyCount`): the session is idle when they are all there is.
    var busyTasksEnding = 0

    /// Whether a task of this process's life was traced (`traceparent`): only then is a webhook's
    /// task looked up for one, so untraced sessions pay nothing per delivery. Set when a traced
    /// task is reserved, before its first event exists (`createTasks`), and when one is loaded.
    var tracesTasks = false

    /// Cluster mode: this replica lost the session's lease and forgot it. Whatever of it still
    /// runs (a transfer's end, a retry timer, a late commit) does nothing more.
    var released = false

    /// Events journaled and not yet acknowledged (lock held).
    package var pendingEvents: Int { Int(max(0, nextEventSeq - 1 - ackedThrough)) }

    /// Tasks that keep the session busy: running or being cancelled (lock held).
    var busyCount: Int { (counts[.running] ?? 0) + (counts[.canceling] ?? 0) }

    init(identifier: String, mode: SessionMode, configuration: SessionConfiguration, configurationJSON: JSONValue,
         createdAt: Timestamp)
    {
        self.identifier = identifier
        self.mode = mode
        self.configuration = configuration
        self.configurationJSON = configurationJSON
        self.createdAt = createdAt
    }

    @inline(__always)
    package func locked<T>(_ body: () throws -> T) rethrows -> T {
        try mutex.withLock { try body() }
    }

    /// Adds a task to memory (lock held).
    func addTask(_ entry: TaskEntry) {
        tasks[entry.record.id] = entry
        if entry.record.traceparent != nil { tracesTasks = true }
        if let key = entry.record.idempotencyKey { idempotencyIndex[key] = entry.record.id }
    }

    /// Drops a task from memory (lock held); its counts are the caller's business. The last one
    /// out gives the tables' storage back: a dictionary keeps the capacity of its largest size,
    /// and a session that once held a batch of thousands would keep that for good.
    @discardableResult
    func dropTask(_ id: String) -> TaskEntry? {
        guard let entry = tasks.removeValue(forKey: id) else { return nil }
        if let key = entry.record.idempotencyKey { idempotencyIndex[key] = nil }
        if tasks.isEmpty {
            tasks = [:]
            idempotencyIndex = [:]
        }
        return entry
    }

    /// Ends the reservation of tasks being created, committed or not (lock held); an emptied set
    /// gives its storage back, as `dropTask` does.
    func endReservation(ids: some Sequence<String>, key: String?) {
        for id in ids { reservedIDs.remove(id) }
        if let key { reservedKeys.remove(key) }
        if reservedIDs.isEmpty { reservedIDs = [] }
    }

    /// The task in memory created with this idempotency key (lock held).
    func task(withIdempotencyKey key: String) -> TaskEntry? {
        idempotencyIndex[key].flatMap { tasks[$0] }
    }

    /// Moves a task between state counts (lock held).
    func count(from old: TaskState?, to new: TaskState?) {
        if let old { counts[old, default: 0] -= 1 }
        if let new { counts[new, default: 0] += 1 }
    }

    /// Tasks that have not completed (lock held).
    var unfinishedCount: Int { (counts[.running] ?? 0) + (counts[.suspended] ?? 0) + (counts[.canceling] ?? 0) }
}
