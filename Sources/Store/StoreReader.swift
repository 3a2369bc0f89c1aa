import Reactor

/// Read-only connections for queries from any thread. WAL lets readers run beside the writer and
/// see the last committed state; a connection is used by one caller at a time, then returned.
public final class StoreReader: @unchecked Sendable {
    private let path: String
    private let idle = Locked<[Database]>([])

    public init(path: String) {
        self.path = path
    }

    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        let database = try idle.withLock { $0.popLast() } ?? open()
        defer { idle.withLock { $0.append(database) } }
        return try body(database)
    }

    private func open() throws -> Database {
        let db = try Database(path: path, readOnly: true)
        try db.execute("PRAGMA query_only = 1")
        // No memory map, as for the writer (`StoreFile`): each reader's page cache (SQLite's
        // default, 2 MB) bounds what it keeps, and there are as many readers as concurrent reads.
        try db.execute("PRAGMA mmap_size = 0")
        return db
    }
}
