/// Opens the database file of a data directory with the settings every connection relies on.
public enum StoreFile {
    /// The writer's connection: WAL, so readers never block it nor it them; `synchronous=FULL`,
    /// so a commit is on disk (the WAL fsynced) before anyone is told it succeeded — a 201 means
    /// stored, even across power loss.
    public static func openForWriting(path: String, migrations: [Migration]) throws -> Database {
        let db = try Database(path: path)
        try db.execute("PRAGMA journal_mode = WAL")
        try db.execute("PRAGMA synchronous = FULL")
        try db.execute("PRAGMA foreign_keys = ON")
        // Checkpoint in the background of normal commits; large enough that bulk inserts are not
        // interrupted by checkpoints every few hundred pages.
        try db.execute("PRAGMA wal_autocheckpoint = 4000")
        // A bigger page cache, and reads through a memory map: bulk inserts probe the indexes on
        // every row, and re-reading their pages with pread showed up in profiles.
        try db.execute("PRAGMA cache_size = -65536")
        try db.execute("PRAGMA mmap_size = 1073741824")
        // Statement journals (a multi-row statement that may fail halfway needs one) in memory:
        // on disk each was a temporary file created, written in pieces and unlinked, about 25
        // system calls a task. They hold what one statement changed, a few pages.
        try db.execute("PRAGMA temp_store = MEMORY")
        try Migrator.migrate(db, to: migrations)
        return db
    }
}
