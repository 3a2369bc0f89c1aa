/// Opens the database file of a data directory with the settings every connection relies on.
public enum StoreFile {
    /// The writer's connection: WAL, so readers never block it nor it them; `synchronous=FULL`,
    /// so a commit is on disk (the WAL fsynced) before anyone is told it succeeded — a 201 means
    /// stored, even across power loss.
    public static func openForWriting(path: String, migrations: [Migration]) throws -> Database {
        let db = try Database(path: path)
        // 8 KiB pages for a new database (an existing one keeps its size): a stored task is about a
        // kilobyte, and 4 KiB pages held three of them with a quarter of each page left over.
        try db.execute("PRAGMA page_size = 8192")
        try db.execute("PRAGMA journal_mode = WAL")
        try db.execute("PRAGMA synchronous = FULL")
        try db.execute("PRAGMA foreign_keys = ON")
        // Checkpoint in the background of normal commits, every 4 MiB of WAL: large enough that
        // bulk inserts are not interrupted every few hundred pages, small enough that the WAL is
        // not a large part of a small database. After a checkpoint the WAL starts over and its file
        // is cut back to that size (it would otherwise stay as large as it ever got).
        try db.execute("PRAGMA wal_autocheckpoint = \(4 << 20 / max(1, Int(try db.scalar("PRAGMA page_size") ?? 4096)))")
        try db.execute("PRAGMA journal_size_limit = \(4 << 20)")
        // 8 MiB of page cache (SQLite's default is 2 MB): bulk inserts probe the indexes on every
        // row, and their hot pages fit; more only grows resident memory (64 MiB held 67 MB after
        // 20,000 tasks) without a measurable saving in CPU. No memory map: mapped pages of the
        // file count as resident, and with random ids every index page is touched sooner or later
        // (16-48 MB more after 20,000 tasks); pread through the OS page cache costs little more.
        try db.execute("PRAGMA cache_size = -8192")
        try db.execute("PRAGMA mmap_size = 0")
        // Statement journals (a multi-row statement that may fail halfway needs one) in memory:
        // on disk each was a temporary file created, written in pieces and unlinked, about 25
        // system calls a task. They hold what one statement changed, a few pages.
        try db.execute("PRAGMA temp_store = MEMORY")
        try Migrator.migrate(db, to: migrations)
        return db
    }
}
