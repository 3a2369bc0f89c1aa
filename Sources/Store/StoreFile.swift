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
        // 8 MiB of page cache (SQLite's default is 2 MB): bulk inserts probe the indexes on every
        // row, and their hot pages fit; more only grows resident memory (64 MiB held 67 MB after
        // 20,000 tasks) without a measurable saving in CPU. No memory map: mapped pages of the
        // file count as resident, and with random ids every index page is touched sooner or later
        // (16-48 MB more after 20,000 tasks); pread through the OS page cache costs little more.
        try db.execute("PRAGMA cache_size = -8192")
        try db.execute("PRAGMA mmap_size = 0")
        try Migrator.migrate(db, to: migrations)
        return db
    }
}
