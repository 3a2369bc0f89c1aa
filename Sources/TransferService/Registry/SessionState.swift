import Reactor

/// One session in memory. Every mutable field is guarded by `lock`; tasks of different sessions
/// never contend.
final class SessionState: @unchecked Sendable {
    let identifier: String
    let mode: SessionMode
    let createdAt: Timestamp
    private let mutex = Locked(())

    // Guarded by the lock.
    var configuration: SessionConfiguration
    /// The configuration as the client gave it, stored so a restart re-validates the same input.
    var configurationJSON: JSONValue
    var lifecycle: SessionLifecycle = .active
    var invalidateMode: InvalidateMode?
    var tasks: [String: TaskEntry] = [:]
    /// Ids and idempotency keys of tasks being created, not yet committed.
    var reservedIDs: Set<String> = []
    var reservedKeys: Set<String> = []
    var counts: [TaskState: Int] = [:]
    var nextSequence: Int64 = 1

    enum InvalidateMode: String, Sendable { case finish, cancel }

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
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        try mutex.withLock { _ in try body() }
    }

    /// Moves a task between state counts (lock held).
    func count(from old: TaskState?, to new: TaskState?) {
        if let old { counts[old, default: 0] -= 1 }
        if let new { counts[new, default: 0] += 1 }
    }

    /// Tasks that have not completed (lock held).
    var unfinishedCount: Int { (counts[.running] ?? 0) + (counts[.suspended] ?? 0) + (counts[.canceling] ?? 0) }
}
