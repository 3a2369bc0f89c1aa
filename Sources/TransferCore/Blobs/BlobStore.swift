import Digests
import Glibc
import Store
import TransferEngine
import TransferModel

/// Blobs on disk (`blobs/<id>`) and their rows. Files are written as a temporary file, fsynced and
/// renamed, like downloads; the row is committed after, so a stored row always has its file.
package final class BlobStore: Sendable {
    let directory: String
    private let store: TaskStore

    package init(directory: String, store: TaskStore) throws(TaskFileError) {
        self.directory = directory
        self.store = store
        try DataLayout.makeDirectories(directory)
    }

    package func path(_ id: String) -> String { directory + "/" + id }

    package func temporaryPath(_ id: String) -> String { directory + "/." + id + ".part" }

    func lookup(_ id: String) throws -> Blob? {
        guard Blob.isValidID(id) else { return nil }
        return try store.reader.read { db in
            let s = try db.statement("SELECT size, sha256, created_at, owner FROM blobs WHERE id = ?")
            try s.bind(.text(id))
            defer { s.reset() }
            guard try s.step() else { return nil }
            return Blob(id: id, size: s.int64(0), sha256: s.text(1)!, createdAt: Timestamp(milliseconds: s.int64(2)), owner: s.text(3))
        }
    }

    /// Commits the row of a blob whose file is in place.
    package func insert(_ blob: Blob, completion: @escaping @Sendable (Result<Void, Error>) -> Void) {
        store.writer.submit({ db in try BlobStore.insert(blob, db) }, completion: completion)
    }

    static func insert(_ blob: Blob, _ db: Database) throws {
        try db.statement("INSERT INTO blobs (id, size, sha256, created_at, owner) VALUES (?, ?, ?, ?, ?)")
            .bind(.text(blob.id), .integer(blob.size), .text(blob.sha256), .integer(blob.createdAt.milliseconds),
                  .optionalText(blob.owner))
            .run()
    }

    /// Removes the row, then the file.
    func delete(_ id: String, completion: @escaping @Sendable (Result<Void, Error>) -> Void) {
        let path = path(id)
        store.writer.submit({ db in try BlobStore.deleteRow(id, db) }) { result in
            if case .success = result { unlink(path) }
            completion(result)
        }
    }

    static func deleteRow(_ id: String, _ db: Database) throws {
        try db.statement("DELETE FROM blobs WHERE id = ?").bind(.text(id)).run()
    }

    /// Client blobs created before `cutoff`, oldest first: candidates for the retention sweep.
    func expired(before cutoff: Timestamp, limit: Int) throws -> [String] {
        try store.reader.read { db in
            let s = try db.statement("SELECT id FROM blobs WHERE owner IS NULL AND created_at < ? ORDER BY created_at LIMIT ?")
            try s.bind(.integer(cutoff.milliseconds), .int(limit))
            defer { s.reset() }
            var ids: [String] = []
            while try s.step() { ids.append(s.text(0)!) }
            return ids
        }
    }

    /// Writes `bytes` as a new blob file (for an inline body), returning the blob; the caller
    /// commits its row together with whatever refers to it.
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
