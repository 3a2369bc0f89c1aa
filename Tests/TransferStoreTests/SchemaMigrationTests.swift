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

    /// A database of migration 30: full task documents, and events with their sessions' names,
    /// type names, random ids and the whole task in `task.completed`.
    @Test func eventsAndDocumentsSurviveTheMoveToCompactRows() throws {
        let path = try databaseAt(version: 30, with: [])
        defer { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } }
        // As 0.1.0 wrote them: the whole task object (also the data of its task.completed), nulls
        // and all, with `_internal` in the row.
        let completedData = #"""
            {"id":"t1","session":"com.example.a","kind":"download","state":"completed","phase":"finished","priority":0.5,\#
            "description":null,"request":{"url":"https://example.com/t1","method":"GET","headers":{},"body":null},\#
            "download":{"destination":"/out/t1"},"begin_at":null,"current_url":null,"response":{"status":200,\#
            "headers":{"Content-Type":"text/plain"},"mime_type":"text/plain","expected_content_length":null,"suggested_filename":"t1"},\#
            "progress":{"bytes_received":3,"bytes_expected_to_receive":-1,"bytes_sent":0,"bytes_expected_to_send":-1,"fraction":null,\#
            "bytes_per_second":0},"result":{"location":"/out/t1","size":3,"sha256":"abc"},"error":null,"metrics":{"attempts":1,\#
            "redirect_count":0,"remote_address":null,"protocol":null,"reused_connection":false,"timings_ms":{"dns":0,"connect":0,\#
            "tls":0,"first_byte":0,"total":0}},"created_at":"2026-11-17T10:13:20.001Z","started_at":null,\#
            "completed_at":"2026-11-18T11:08:20.001Z","next_attempt_at":null}
            """#
        let oldDocument = String(completedData.dropLast())
            + #","_internal":{"sequence":1,"idempotency_key":null,"idempotency_hash":null,"validator":null,"body_location":null}}"#
        let old: [(seq: Int64, id: String, type: String, data: String)] = [
            (1, "evt_0123456789abcdefghij", "task.created", #"{"kind":"download"}"#),
            (2, "evt_old2", "task.completed", completedData),
            (3, "evt_old3", "session.all_tasks_finished", "{}"),
        ]
        do {  // closed before the store opens it
            let db = try Database(path: path)
            try db.statement("""
                INSERT INTO tasks (session, id, sequence, kind, state, completed_at, doc)
                VALUES ('com.example.a', 't1', 1, 'download', 'completed', 1795000100001, ?)
                """).bind(.text(oldDocument)).run()
            for e in old {
                try db.statement("INSERT INTO events (session, seq, id, type, task, at, data) VALUES ('com.example.a', ?, ?, ?, 't1', ?, ?)")
                    .bind(.integer(e.seq), .text(e.id), .text(e.type), .integer(1_795_000_000_000 + e.seq), .text(e.data)).run()
            }
        }
        let store = try SQLiteTransferStore(path: path)
        defer { store.close() }
        let events = try store.events(session: "com.example.a", after: 0, limit: 10)
        #expect(events.map(\.id) == old.map(\.id) && events.map(\.type.rawValue) == old.map(\.type))
        #expect(events.map { String(decoding: $0.data, as: UTF8.self) } == old.map(\.data))
        #expect(try store.event(session: "com.example.a", id: "evt_old2")?.seq == 2)
        #expect(try store.event(session: "com.example.a", id: "evt_0123456789abcdefghij")?.seq == 1)
        #expect(try store.loadSessions().isEmpty)  // events alone make no session

        // The old document reads as the API showed it (with what the API shows since: the
        // digests the download computed, sha256 then, no origin digest verified, no size limit),
        // and takes a PATCH.
        let task = try #require(try store.loadTask(session: "com.example.a", id: "t1"))
        let shownNow = completedData
            .replacing(#""download":{"destination":"/out/t1"}"#, with: #""download":{"destination":"/out/t1","digests":["sha256"],"max_bytes":null}"#)
            .replacing(#""sha256":"abc"}"#, with: #""sha256":"abc","digests":{"sha256":"abc"},"verified":[]}"#)
        #expect(String(decoding: task.jsonBytes(), as: UTF8.self) == shownNow)
        try store.apply([.updateDetails(session: "com.example.a", id: "t1", priority: 0.7, description: nil),
                         .insertEvents([Event(id: Event.newID(), seq: 4, session: "com.example.a", type: .taskCompleted, task: "t1",
                                              at: .now(), data: Array("{}".utf8))])])
        #expect(try store.loadTask(session: "com.example.a", id: "t1")?.priority == 0.7)
        #expect(try store.events(session: "com.example.a", after: 0, limit: 10).map(\.seq) == [1, 2, 3, 4])
    }
}
