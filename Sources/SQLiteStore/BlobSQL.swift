import Store
import TransferModel

/// SQL for the records of blobs (their files are `BlobStore`'s).
enum BlobSQL {
    static func insert(_ blob: Blob, _ db: Database) throws {
        try db.statement("INSERT INTO blobs (id, size, sha256, created_at, owner, principal) VALUES (?, ?, ?, ?, ?, ?)")
            .bind(.text(blob.id), .integer(blob.size), .text(blob.sha256), .integer(blob.createdAt.milliseconds),
                  .optionalText(blob.owner), .optionalText(blob.principal))
            .run()
    }

    static func delete(_ id: String, _ db: Database) throws {
        try db.statement("DELETE FROM blobs WHERE id = ?").bind(.text(id)).run()
    }

    static func lookup(_ id: String, _ db: Database) throws -> Blob? {
        let s = try db.statement("SELECT size, sha256, created_at, owner, principal FROM blobs WHERE id = ?")
        try s.bind(.text(id))
        defer { s.reset() }
        guard try s.step() else { return nil }
        return Blob(id: id, size: s.int64(0), sha256: s.text(1)!, createdAt: Timestamp(milliseconds: s.int64(2)), owner: s.text(3),
                    principal: s.text(4))
    }

    static func expired(before cutoff: Timestamp, limit: Int, _ db: Database) throws -> [String] {
        let s = try db.statement("SELECT id FROM blobs WHERE owner IS NULL AND created_at < ? ORDER BY created_at LIMIT ?")
        try s.bind(.integer(cutoff.milliseconds), .int(limit))
        defer { s.reset() }
        var ids: [String] = []
        while try s.step() { ids.append(s.text(0)!) }
        return ids
    }
}
