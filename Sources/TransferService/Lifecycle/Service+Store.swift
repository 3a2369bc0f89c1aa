import PostgresStore
import SQLiteStore
import TransferStore

extension Service {
    /// The store the configuration names: PostgreSQL with `--database`, else the SQLite file at
    /// `path` in the data directory.
    /// In cluster mode `replica` fences every batch by its leases.
    static func openStore(_ configuration: ServiceConfiguration, path: String, replica: String,
                          observeCommit: @escaping @Sendable (UInt64) -> Void) throws -> any TransferStore
    {
        guard let url = configuration.database, let cluster = configuration.cluster else {
            return try SQLiteTransferStore(path: path, observeCommit: observeCommit)
        }
        return try PostgresTransferStore(url: url, owner: replica, leaseSeconds: cluster.leaseTimeout, observeCommit: observeCommit)
    }
}
