import PostgresStore
import SQLiteStore
import TransferStore

extension Service {
    /// The store the configuration names: PostgreSQL with `--database`, else the SQLite file at
    /// `path` in the data directory.
    static func openStore(_ configuration: ServiceConfiguration, path: String,
                          observeCommit: @escaping @Sendable (UInt64) -> Void) throws -> any TransferStore
    {
        guard let url = configuration.database else { return try SQLiteTransferStore(path: path, observeCommit: observeCommit) }
        return try PostgresTransferStore(url: url, observeCommit: observeCommit)
    }
}
