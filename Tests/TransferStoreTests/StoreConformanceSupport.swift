import Glibc
import Testing
@testable import PostgresStore
@testable import SQLiteStore
@testable import TransferModel
@testable import TransferStore
import TransferVocabulary

/// The store implementations the conformance tests run against, each a test case of its own;
/// PostgreSQL when `TRANSFERD_TEST_POSTGRES_URL` names a server (`make test` starts one).
enum StoreKind: String, CaseIterable, CustomTestStringConvertible {
    case sqlite, memory, postgres

    static var allCases: [StoreKind] { TestPostgres.url == nil ? [.sqlite, .memory] : [.sqlite, .memory, .postgres] }

    var testDescription: String { rawValue }

    /// Runs `body` with a new, empty store of this kind (SQLite in a directory of its own).
    func withStore(_ body: (any TransferStore) throws -> Void) throws {
        switch self {
        case .memory:
            let store = InMemoryTransferStore()
            defer { store.close() }
            try body(store)
        case .sqlite:
            let directory = "/tmp/transferd-store-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            mkdir(directory, 0o700)
            let path = directory + "/transferd.sqlite"
            let store = try SQLiteTransferStore(path: path)
            defer {
                store.close()
                for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
                rmdir(directory)
            }
            try body(store)
        case .postgres:
            try TestPostgres.withSchema { url in
                let store = try PostgresTransferStore(url: url)
                defer { store.close() }
                try body(store)
            }
        }
    }
}

/// Rows and records for the tests.
enum Fixture {
    static let start: Int64 = 1_795_000_000_000

    static func session(_ identifier: String = "s1") -> StoredSession {
        StoredSession(identifier: identifier, mode: "background", configuration: #"{"headers":{"X-A":"1"}}"#, delegate: nil,
                      lifecycle: "active", invalidateMode: nil, createdAt: start)
    }

    static func task(_ id: String, sequence: Int64, state: TaskState = .suspended, session: String = "s1",
                     kind: TaskKind = .download, key: String? = nil) -> TaskRecord
    {
        var t = TaskRecord(session: session, id: id, sequence: sequence, kind: kind, url: "https://example.com/\(id)",
                           method: kind == .upload ? "PUT" : "GET", createdAt: Timestamp(milliseconds: start + sequence))
        t.state = state
        t.phase = state == .completed ? .finished : .waiting
        if state == .completed { t.completedAt = Timestamp(milliseconds: start + 1000 + sequence) }
        t.idempotencyKey = key
        return t
    }

    static func insert(_ tasks: TaskRecord...) -> StoreChange {
        .insertTasks(tasks, documents: tasks.map { $0.storageDocument() })
    }

    static func update(_ task: TaskRecord) -> StoreChange { .updateTask(task, document: task.storageDocument()) }

    static func event(_ seq: Int64, session: String = "s1", at: Int64 = start) -> Event {
        Event(id: "ev-\(session)-\(seq)", seq: seq, session: session, type: .taskCreated, task: "t\(seq)",
              at: Timestamp(milliseconds: at), data: Array(#"{"n":\#(seq)}"#.utf8))
    }

    static func attempt(_ seq: Int64, session: String = "s1", at: Int64 = start, status: Int? = 500) -> DeliveryAttempt {
        DeliveryAttempt(session: session, event: "ev-\(session)-\(seq)", seq: seq, attempt: 1, at: Timestamp(milliseconds: at),
                        status: status, error: status == nil ? "connection refused" : nil,
                        nextAttemptAt: Timestamp(milliseconds: at + 5000))
    }

    static func blob(_ id: String, owner: String? = nil, at: Int64 = start) -> Blob {
        Blob(id: id, size: 3, sha256: String(repeating: "a", count: 64), createdAt: Timestamp(milliseconds: at), owner: owner)
    }

    static func cookie(_ name: String, expires: Int64?) -> Cookie {
        Cookie(name: name, value: "v-\(name)", domain: "example.com", hostOnly: true, path: "/", secure: false, httpOnly: true,
               expires: expires)
    }
}
