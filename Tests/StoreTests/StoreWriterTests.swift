import Glibc
import Reactor
import Testing
@testable import Store

func temporaryDatabasePath() -> String {
    var template = Array("/tmp/transferd-store-XXXXXX".utf8CString)
    let dir = mkdtemp(&template)!
    return String(cString: dir) + "/test.sqlite"
}

let testMigrations = [
    Migration(1, "CREATE TABLE items (id TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;"),
    Migration(2, "ALTER TABLE items ADD COLUMN note TEXT;"),
]

struct StoreWriterTests {
    @Test func migrationsRunInOrderOnceAndRecordTheVersion() throws {
        let path = temporaryDatabasePath()
        do {
            let db = try StoreFile.openForWriting(path: path, migrations: testMigrations)
            #expect(try db.scalar("PRAGMA user_version") == 2)
            try db.statement("INSERT INTO items (id, value, note) VALUES (?, ?, ?)").bind(.text("a"), .integer(1), .text("n")).run()
        }
        // Opening again applies nothing twice (the ALTER would fail if it ran again).
        let db = try StoreFile.openForWriting(path: path, migrations: testMigrations)
        #expect(try db.scalar("SELECT count(*) FROM items") == 1)
    }

    @Test func aNewerDatabaseIsRefused() throws {
        let path = temporaryDatabasePath()
        _ = try StoreFile.openForWriting(path: path, migrations: testMigrations)
        #expect(throws: DatabaseError.self) { _ = try StoreFile.openForWriting(path: path, migrations: [testMigrations[0]]) }
    }

    @Test func concurrentSubmissionsAreGroupCommitted() throws {
        let path = temporaryDatabasePath()
        let writer = StoreWriter(database: try StoreFile.openForWriting(path: path, migrations: testMigrations))
        let done = ThreadSignal()
        let completed = Locked(0)
        let total = 2000
        for i in 0..<total {
            writer.submit({ db in
                try db.statement("INSERT INTO items (id, value) VALUES (?, ?)").bind(.text("k\(i)"), .int(i)).run()
            }) { result in
                if case .success = result, completed.withLock({ $0 += 1; return $0 }) == total { done.post() }
            }
        }
        #expect(done.wait(seconds: 30))
        let reader = StoreReader(path: path)
        #expect(try reader.read { try $0.scalar("SELECT count(*) FROM items") } == Int64(total))
        writer.close()
    }

    @Test func oneFailingOperationRollsBackAloneAndTheGroupCommits() throws {
        let path = temporaryDatabasePath()
        let writer = StoreWriter(database: try StoreFile.openForWriting(path: path, migrations: testMigrations))
        try writer.perform { db in try db.statement("INSERT INTO items (id, value) VALUES ('dup', 1)").run() }
        let results = Locked<[String: Bool]>([:])
        let done = ThreadSignal()
        for key in ["x", "dup", "y"] {
            writer.submit({ db in
                // Two statements: the first must be undone when the second fails.
                try db.statement("INSERT INTO items (id, value) VALUES (?, 7)").bind(.text(key + "-first")).run()
                try db.statement("INSERT INTO items (id, value) VALUES (?, 7)").bind(.text(key)).run()
            }) { result in
                let count = results.withLock { r -> Int in
                    if case .success = result { r[key] = true } else { r[key] = false }
                    return r.count
                }
                if count == 3 { done.post() }
            }
        }
        #expect(done.wait(seconds: 10))
        #expect(results.withLock { $0 } == ["x": true, "dup": false, "y": true])
        let reader = StoreReader(path: path)
        let ids = try reader.read { db -> [String] in
            let s = try db.statement("SELECT id FROM items ORDER BY id")
            var out: [String] = []
            while try s.step() { out.append(s.text(0)!) }
            return out
        }
        #expect(ids == ["dup", "x", "x-first", "y", "y-first"])
        writer.close()
    }

    @Test func constraintViolationsAreRecognised() throws {
        let path = temporaryDatabasePath()
        let writer = StoreWriter(database: try StoreFile.openForWriting(path: path, migrations: testMigrations))
        try writer.perform { db in try db.statement("INSERT INTO items (id, value) VALUES ('a', 1)").run() }
        do {
            try writer.perform { db in try db.statement("INSERT INTO items (id, value) VALUES ('a', 2)").run() }
            Issue.record("duplicate insert succeeded")
        } catch let error as DatabaseError {
            #expect(error.isConstraintViolation)
        }
        writer.close()
    }

    @Test func closeCommitsWhatIsQueued() throws {
        let path = temporaryDatabasePath()
        let writer = StoreWriter(database: try StoreFile.openForWriting(path: path, migrations: testMigrations))
        for i in 0..<100 {
            writer.submit({ db in try db.statement("INSERT INTO items (id, value) VALUES (?, 0)").bind(.text("q\(i)")).run() }) { _ in }
        }
        writer.close()
        let reader = StoreReader(path: path)
        #expect(try reader.read { try $0.scalar("SELECT count(*) FROM items") } == 100)
    }

    @Test func statementsAreCachedAndReset() throws {
        let db = try StoreFile.openForWriting(path: temporaryDatabasePath(), migrations: testMigrations)
        let first = try db.statement("SELECT ?")
        try first.bind(.integer(5))
        #expect(try first.step())
        let again = try db.statement("SELECT ?")
        #expect(first === again)
        // Reset with bindings cleared: the unbound parameter reads as NULL.
        #expect(try again.step())
        #expect(again.isNull(0))
    }
}
