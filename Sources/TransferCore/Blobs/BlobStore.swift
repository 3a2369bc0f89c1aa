import Digests
import Glibc
import TransferModel
import TransferStore

/// Blobs on disk (`blobs/<id>`) and their records in the store. Files are written as a temporary
/// file, fsynced and renamed, like downloads; the record is committed after, so a stored record
/// always has its file.
package final class BlobStore: Sendable {
    let directory: String
    private let store: any TransferStore

    package init(directory: String, store: any TransferStore) throws(TaskFileError) {
        self.directory = directory
        self.store = store
        try DataLayout.makeDirectories(directory)
    }

    package func path(_ id: String) -> String { directory + "/" + id }

    package func temporaryPath(_ id: String) -> String { directory + "/." + id + ".part" }

    func lookup(_ id: String) throws -> Blob? {
        guard Blob.isValidID(id) else { return nil }
        return try store.blob(id)
    }

    /// Commits the record of a blob whose file is in place.
    package func insert(_ blob: Blob, completion: @escaping @Sendable (Result<Void, Error>) -> Void) {
        store.commit([.insertBlob(blob)]) { completion($0.map { _ in }) }
    }

    /// Removes the record, then the file.
    func delete(_ id: String, completion: @escaping @Sendable (Result<Void, Error>) -> Void) {
        let path = path(id)
        store.commit([.deleteBlob(id)]) { result in
            if case .success = result { unlink(path) }
            completion(result.map { _ in })
        }
    }

    /// Client blobs created before `cutoff`, oldest first: candidates for the retention sweep.
    func expired(before cutoff: Timestamp, limit: Int) throws -> [String] {
        try store.expiredBlobs(before: cutoff, limit: limit)
    }

    /// Writes `bytes` as a new blob file (for an inline body), returning the blob; the caller
    /// commits its record together with whatever refers to it.
    func writeFile(_ bytes: [UInt8], owner: String) throws(TaskFileError) -> Blob {
        let id = Blob.newID()
        let temporary = temporaryPath(id)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TaskFileError(code: errno, what: "cannot create \(temporary)") }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let code = errno
                close(fd)
                unlink(temporary)
                throw TaskFileError(code: code, what: "cannot write \(temporary)")
            }
            written += n
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard synced, rename(temporary, path(id)) == 0 else {
            let code = errno
            unlink(temporary)
            throw TaskFileError(code: code, what: "cannot store the body")
        }
        return Blob(id: id, size: Int64(bytes.count), sha256: SHA256Hex.of(bytes), createdAt: Timestamp.now(), owner: owner)
    }
}
