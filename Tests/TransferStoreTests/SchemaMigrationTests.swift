import Glibc
import Store
import Testing
@testable import SQLiteStore
@testable import TransferModel
@testable import TransferStore

/// Migrations that rebuild a table must carry every stored row over, readable as before.
struct SchemaMigrationTests {
    /// A data directory's database written by a transferd that stopped at `version`.
    func databaseAt(version: Int, with tasks: [TaskRecord]) throws -> String {
        let directory = "/tmp/transferd-migration-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(directory, 0o700)
        let path = directory + "/transferd.sqlite"
        let db = try Database(path: path)
        try Migrator.migrate(db, to: Schema.migrations.filter { $0.version <= version })
        try db.execute("BEGIN")
        try TaskSQL.insertTasks(tasks, documents: tasks.map { $0.storageDocument() }, db)
        try db.execute("COMMIT")
        return path
    }

    func task(_ id: String, sequence: Int64, state: TaskState, session: String = "com.example.a") -> TaskRecord {
        var t = TaskRecord(session: session, id: id, sequence: sequence, kind: .download, url: "https://example.com/\(id)",
                           method: "GET", createdAt: Timestamp(milliseconds: 1_795_000_000_000 + sequence))
        t.state = state
        if state == .completed { t.completedAt = Timestamp(milliseconds: 1_795_000_100_000 + sequence) }
        t.idempotencyKey = sequence == 2 ? "key-2" : nil
        return t
    }

    @Test func tasksSurviveTheMoveToARowidTable() throws {
        let before = [task("zz-last-by-id", sequence: 1, state: .suspended), task("aa-first-by-id", sequence: 2, state: .completed),
                      task("mm", sequence: 3, state: .running), task("mm", sequence: 1, state: .suspended, session: "other")]
        let path = try databaseAt(version: 4, with: before)
        defer { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } }

        let store = try SQLiteTransferStore(path: path)
        defer { store.close() }
        for t in before {
            let loaded = try #require(try store.loadTask(session: t.session, id: t.id))
            #expect(loaded.sequence == t.sequence && loaded.state == t.state && loaded.url == t.url)
            #expect(loaded.idempotencyKey == t.idempotencyKey && loaded.completedAt == t.completedAt)
        }
        let listed = try store.listTasks(session: "com.example.a", after: 0, state: nil, kind: nil, limit: 10)
        #expect(listed.map(\.id) == ["zz-last-by-id", "aa-first-by-id", "mm"])
        #expect(try store.loadUnfinishedTasks().count == 3)
        #expect(try store.completedBefore(Timestamp(milliseconds: 1_795_000_200_000), limit: 10).map(\.id) == ["aa-first-by-id"])

        // The constraints came along: an id or an idempotency key is still unique within a session.
        for duplicate in [task("mm", sequence: 4, state: .suspended), task("new", sequence: 5, state: .suspended)] {
            var clash = duplicate
            if clash.id == "new" { clash.idempotencyKey = "key-2" }
            #expect(throws: StoreError.self) { try store.apply([.insertTasks([clash], documents: [clash.storageDocument()])]) }
        }
        let summaries = try store.loadSessionSummaries(["com.example.a", "other"])
        let counts = summaries["com.example.a"]?.counts ?? [:]
        #expect(counts[.suspended] == 1 && counts[.completed] == 1 && counts[.running] == 1 && (counts[.canceling] ?? 0) == 0)
        #expect(summaries["com.example.a"]?.maxSequence == 3)
        #expect(summaries["other"]?.maxSequence == 1)
    }
}
