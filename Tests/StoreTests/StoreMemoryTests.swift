import Testing
@testable import Store

/// What a connection may keep in memory is bounded, whatever the size of the file: a page cache of
/// a fixed size, and no memory map (mapped pages of the file would count as the process's own).
struct StoreMemoryTests {
    @Test func theWriterKeepsEightMebibytesOfPagesAndMapsNothing() throws {
        let db = try StoreFile.openForWriting(path: temporaryDatabasePath(), migrations: testMigrations)
        #expect(try db.scalar("PRAGMA cache_size") == -8192)
        #expect(try db.scalar("PRAGMA mmap_size") == 0)
    }

    @Test func readersKeepSQLitesDefaultCacheAndMapNothing() throws {
        let path = temporaryDatabasePath()
        _ = try StoreFile.openForWriting(path: path, migrations: testMigrations)
        let (cache, map) = try StoreReader(path: path).read { db in
            (try db.scalar("PRAGMA cache_size"), try db.scalar("PRAGMA mmap_size"))
        }
        #expect(cache == -2000)
        #expect(map == 0)
    }
}
