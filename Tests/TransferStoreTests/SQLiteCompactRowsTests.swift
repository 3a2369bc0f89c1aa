import Glibc
import Store
import Testing
@testable import SQLiteStore
@testable import TransferModel
@testable import TransferStore

/// What the SQLite store writes for a completed download: the task once, without its defaults,
/// and its completion's events as references to it (a few hundred bytes where there were
/// kilobytes: the task again in `task.completed`, with an overflow page of its own).
struct SQLiteCompactRowsTests {
    typealias F = Fixture

    @Test func aCompletedDownloadIsStoredOnceAndWithoutDefaults() throws {
        let directory = "/tmp/transferd-compact-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(directory, 0o700)
        let path = directory + "/transferd.sqlite"
        defer {
            for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
            rmdir(directory)
        }
        let store = try SQLiteTransferStore(path: path)
        var running = StoredRecords.completedDownload("d", sequence: 1)
        running.state = .running
        running.completedAt = nil
        try store.apply([.upsertSession(F.session()), F.insert(running)])
        let done = StoredRecords.completedDownload("d", sequence: 1)
        try store.apply([F.update(done), StoredRecords.completion(done, firstSeq: 1).0])
        store.close()

        let db = try Database(path: path, readOnly: true)
        let stored = try db.statement("SELECT type, length(data), length(id) FROM events ORDER BY seq")
        var rows: [(type: Int64, data: Int, id: Int)] = []
        while try stored.step() { rows.append((stored.int64(0), stored.int(1), stored.int(2))) }
        stored.reset()
        // response_received, finished_downloading and completed refer to the task; ids keep their random part.
        #expect(rows.map(\.type) == [4, 8, 9, 10] && rows.map(\.data) == [0, 0, 0, 2] && rows.allSatisfy { $0.id == 11 })

        let doc = try db.statement("SELECT doc FROM tasks")
        #expect(try doc.step())
        let text = doc.text(0)!
        doc.reset()
        for left in ["null", "\"id\"", "\"session\"", "\"state\"", "\"phase\"", "\"priority\"", "\"method\"", "\"current_url\"",
                     "\"fraction\"", "\"location\"", "\"size\"", "\"mime_type\"", "\"expected_content_length\"", "\"bytes_sent\"",
                     "\"redirect_count\"", "\"completed_at\"", "\"_internal\""]
        {
            #expect(!text.contains(left), "\(left) in \(text)")
        }
        #expect(text.utf8.count < done.jsonBytes().count * 2 / 3)
    }
}
