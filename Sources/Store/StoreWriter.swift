import Dispatch
import Glibc
import Reactor
import Synchronization

/// The one thread that writes to the database, committing in groups.
///
/// Callers submit operations; the writer takes everything queued, runs it in one
/// `BEGIN IMMEDIATE … COMMIT`, each operation inside its own savepoint (so one failing operation —
/// a duplicate id, say — rolls back alone and the rest of the group still commits), and then tells
/// every caller the outcome. With `synchronous=FULL` a commit is one WAL fsync however many
/// operations it carries: that is how thousands of inserts a second stay durable.
///
/// The outcomes are delivered on a serial queue of their own, in commit order, so the writer goes
/// on to the next group while the callers of the last one are answered: under bulk creation the
/// writer thread is the bottleneck, and answering (registering thousands of tasks in memory,
/// assembling a batch reply) took a tenth of its time.
public final class StoreWriter: @unchecked Sendable {
    private struct Pending {
        let work: (Database) throws -> Any
        let completion: (Result<Any, Error>) -> Void
    }

    private let database: Database
    private var thread: GroupingThread<Pending>!
    private let completions = DispatchQueue(label: "transferd.store.completions")
    /// Told how long each group's transaction took, `BEGIN` to `COMMIT`, in nanoseconds.
    private let observeCommit: @Sendable (UInt64) -> Void
    /// The last group's transaction failed as a whole; cleared by the next one committed.
    private let failing = Atomic<Bool>(false)

    public init(database: Database, maxGroup: Int = 4096, observeCommit: @escaping @Sendable (UInt64) -> Void = { _ in }) {
        self.database = database
        self.observeCommit = observeCommit
        thread = GroupingThread(name: "store-writer", maxGroup: maxGroup) { self.commit($0) }
    }

    /// Queues `work` for the next group commit; `completion` runs after the commit (or its failure),
    /// on the writer's completion queue, in commit order. It must be quick: answer a request, hand
    /// work elsewhere.
    public func submit<T>(_ work: @escaping (Database) throws -> T, completion: @escaping (Result<T, Error>) -> Void) {
        let pending = Pending(work: { try work($0) as Any }, completion: { result in
            completion(result.map { $0 as! T })
        })
        if !thread.submit(pending) {
            completion(.failure(DatabaseError(code: 21, message: "the store is shut down")))
        }
    }

    /// Runs `work` and waits for its commit. For start-up and tests; never on an event loop.
    public func perform<T>(_ work: @escaping (Database) throws -> T) throws -> T {
        let done = ThreadSignal()
        let result = Locked<Result<T, Error>?>(nil)
        submit(work) { r in
            result.withLock { $0 = r }
            done.post()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Whether the last group failed as a whole (the disk is full, an I/O error): every change
    /// is refused until one commits again.
    public var isFailing: Bool { failing.load(ordering: .acquiring) }

    /// Queues a write that changes nothing but still needs room in the log (the schema version
    /// rewritten as it is: page 1 goes to the WAL again), so that a store failing while idle
    /// finds out when it can write again.
    public func probe() {
        submit({ db in
            let version = try db.scalar("PRAGMA user_version") ?? 0
            try db.execute("PRAGMA user_version = \(version)")
        }, completion: { _ in })
    }

    /// Commits what is queued, then stops the writer thread once every completion has run.
    public func close() {
        thread.close()
        completions.sync {}
    }

    private func commit(_ batch: [Pending]) {
        var results: [Result<Any, Error>] = []
        results.reserveCapacity(batch.count)
        let began = MonotonicClock.now()
        do {
            try run("BEGIN IMMEDIATE")
            for item in batch {
                try run("SAVEPOINT op")
                do {
                    results.append(.success(try item.work(database)))
                    try run("RELEASE op")
                } catch {
                    try run("ROLLBACK TO op")
                    try run("RELEASE op")
                    results.append(.failure(error))
                }
            }
            try run("COMMIT")
            failing.store(false, ordering: .releasing)
            observeCommit(MonotonicClock.now() - began)
        } catch {
            // The transaction as a whole failed (disk full, I/O error): nothing of it is stored.
            try? database.execute("ROLLBACK")
            failing.store(true, ordering: .releasing)
            deliver(Outcomes(batch: batch, results: batch.map { _ in .failure(error) }))
            return
        }
        deliver(Outcomes(batch: batch, results: results))
    }

    /// A group's callers and their results, handed from the writer thread to the completion queue.
    /// `@unchecked Sendable`: once handed over, only that queue touches them.
    private struct Outcomes: @unchecked Sendable {
        let batch: [Pending]
        let results: [Result<Any, Error>]
    }

    private func deliver(_ outcomes: Outcomes) {
        completions.async {
            for (item, result) in zip(outcomes.batch, outcomes.results) { item.completion(result) }
        }
    }

    /// Runs a transaction-control statement, prepared once and cached: `sqlite3_exec` parses the
    /// text each time, which cost more than a small operation's own work.
    private func run(_ sql: String) throws {
        try database.statement(sql).run()
    }
}
