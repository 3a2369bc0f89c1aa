import Dispatch
import Foundation
import Glibc
import Postgres
import Reactor
import XCTest
@testable import PostgresStore
@testable import TransferModel
@testable import TransferStore

/// What only the PostgreSQL store has to do: migrate once among replicas starting together,
/// survive the server's restart, notify committed events. (Everything else is the conformance
/// suite's, which runs against PostgreSQL too.)
final class PostgresStoreTests: PostgresTestCase {
    /// Replicas starting at once must not race on `CREATE TABLE`: the advisory lock lines them up
    /// and the later ones find the migrations applied.
    func testMigrationsRunOnceWhenManyStoresStartAtOnce() throws {
        try TestPostgres.withSchema { url in
            let stores = Locked<[Result<PostgresTransferStore, Error>]>([])
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                let result = Result { try PostgresTransferStore(url: url) }
                stores.withLock { $0.append(result) }
            }
            let opened = try stores.withLock { $0 }.map { try $0.get() }
            defer { opened.forEach { $0.close() } }
            let db = try PostgresConnection(url: url)
            let rows = try db.query("SELECT version, count(*) FROM schema_migrations GROUP BY version ORDER BY version")
            XCTAssertEqual((0..<rows.count).map { rows.int64($0, 0) }, PostgresSchema.migrations.map { Int64($0.version) })
            XCTAssertTrue((0..<rows.count).allSatisfy { rows.int64($0, 1) == 1 })
        }
    }

    /// A blob past retention that an unfinished task of any replica still uploads from is not
    /// offered for deletion; once that task completes, it is.
    func testABlobAnUnfinishedTaskUsesDoesNotExpire() throws {
        try TestPostgres.withSchema { url in
            let store = try PostgresTransferStore(url: url)
            defer { store.close() }
            var upload = F.task("up", sequence: 1, state: .running, kind: .upload)
            upload.body = .blob(id: "used", owned: false)
            try store.apply([.upsertSession(F.session()), .insertBlob(F.blob("used")), .insertBlob(F.blob("free", at: F.start + 1)),
                             F.insert(upload)])
            let cutoff = Timestamp(milliseconds: F.start + 20_000)
            XCTAssertEqual(try store.expiredBlobs(before: cutoff, limit: 10), ["free"])
            upload.state = .completed
            upload.completedAt = Timestamp(milliseconds: F.start + 2)
            try store.apply([F.update(upload)])
            XCTAssertEqual(try store.expiredBlobs(before: cutoff, limit: 10), ["used", "free"])
        }
    }

    /// The server goes away under a live store and comes back: meanwhile the store is not
    /// readable and commits fail (they neither crash nor hang); afterwards it reconnects by itself.
    func testStoreRecoversWhenTheServerRestarts() throws {
        let server = try TestPostgresServer()
        let store = try PostgresTransferStore(url: server.url)
        defer { store.close() }
        try store.apply([.upsertSession(F.session()), F.insert(F.task("before", sequence: 1))])
        XCTAssertTrue(store.isAvailable())

        try server.stop()
        XCTAssertFalse(store.isAvailable())
        XCTAssertThrowsError(try store.apply([F.insert(F.task("lost", sequence: 2))]))

        try server.start()
        XCTAssertTrue(store.isAvailable(), "a read reconnects")
        try store.apply([F.insert(F.task("after", sequence: 3))])

        // A restart while the store is idle: the first write finds its connection broken, and makes a new one.
        try server.stop()
        try server.start()
        try store.apply([F.insert(F.task("idle", sequence: 4))])
        XCTAssertEqual(try store.listTasks(session: "s1", after: 0, state: nil, kind: nil, limit: 10).map(\.id),
                       ["before", "after", "idle"])
    }

    /// Each session's newest seq of a committed batch is notified at commit; a batch that fails
    /// notifies nothing.
    func testCommittedEventsAreNotified() throws {
        try TestPostgres.withSchema { url in
            let store = try PostgresTransferStore(url: url)
            defer { store.close() }
            let listener = try PostgresConnection(url: url)
            try listener.listen(PostgresTransferStore.eventsChannel)
            try store.apply([.upsertSession(F.session("s1")), .upsertSession(F.session("s2")),
                             .insertEvents([F.event(1), F.event(2), F.event(1, session: "s2"), F.event(3)])])
            // The failing batch reuses seq 3.
            XCTAssertThrowsError(try store.apply([.insertEvents([F.event(4), F.event(3)])]))
            try store.apply([.insertEvents([F.event(1, session: "s3")])])

            var received: [String] = []
            for _ in 0..<100 where received.count < 3 {
                var pollfd = pollfd(fd: listener.socketDescriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&pollfd, 1, 100)
                received += try listener.drainNotifications().map { "\($0.channel) \($0.payload)" }
            }
            XCTAssertEqual(received.sorted(), ["transferd_events s1:3", "transferd_events s2:1", "transferd_events s3:1"])
        }
    }

    /// A batch waiting for a row another session holds locked fails after the lock timeout instead
    /// of stalling the writer, and the next batch commits.
    func testABatchBlockedByALockFailsInsteadOfHanging() throws {
        try TestPostgres.withSchema { url in
            let store = try PostgresTransferStore(url: url, lockTimeoutSeconds: 0.2)
            defer { store.close() }
            try store.apply([.upsertSession(F.session()), F.insert(F.task("a", sequence: 1))])
            let other = try PostgresConnection(url: url)
            try other.execute("BEGIN; SELECT 1 FROM tasks WHERE id = 'a' FOR UPDATE")
            XCTAssertThrowsError(try store.apply([.updateState(session: "s1", id: "a", state: .running, phase: .waiting)])) { error in
                XCTAssertEqual((error as? PostgresError)?.sqlState, "55P03", "\(error)")
            }
            try other.execute("ROLLBACK")
            try store.apply([.updateState(session: "s1", id: "a", state: .running, phase: .waiting)])
            XCTAssertEqual(try store.loadTask(session: "s1", id: "a")?.state, .running)
        }
    }

    /// Not a benchmark: one figure for the record, printed.
    func testAThousandTaskBatchCommitsInOneGo() throws {
        try TestPostgres.withSchema { url in
            let store = try PostgresTransferStore(url: url)
            defer { store.close() }
            try store.apply([.upsertSession(F.session())])
            let tasks = (1...1000).map { F.task("t\($0)", sequence: Int64($0), key: "k\($0)") }
            let started = DispatchTime.now().uptimeNanoseconds
            try store.apply([.insertTasks(tasks, documents: tasks.map { $0.storageDocument() })])
            let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
            print("PostgreSQL: a batch of 1,000 tasks committed in \(milliseconds) ms")
            XCTAssertEqual(try store.loadSessionSummaries(["s1"])["s1"]?.maxSequence, 1000)
        }
    }

    /// Text parameters, arrays and bytea round-trip whatever they hold.
    func testParametersRoundTrip() throws {
        let db = try PostgresConnection(url: TestPostgres.url!)
        let texts: [String?] = ["plain", #"quote " and \ backslash"#, nil, "{braces},commas", "ünïcode ✓", "NULL", ""]
        let rows = try db.query("SELECT x FROM unnest($1::text[]) WITH ORDINALITY AS u (x, n) ORDER BY n", [PostgresText.array(texts)])
        XCTAssertEqual((0..<rows.count).map { rows.text($0, 0) }, texts)
        let bytes: [UInt8] = [0, 1, 0x5C, 0x7F, 0x80, 0xFF]
        let echoed = try db.query("SELECT $1::bytea", [PostgresText.bytea(bytes)])
        XCTAssertEqual(echoed.bytea(0, 0), bytes)
        XCTAssertThrowsError(try db.query("SELECT 1/0")) { error in
            XCTAssertEqual((error as? PostgresError)?.sqlState, "22012")
            XCTAssertEqual((error as? PostgresError)?.isConnectionBroken, false)
        }
    }
}
