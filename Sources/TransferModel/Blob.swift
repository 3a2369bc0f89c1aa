import JSON

/// Bytes handed to transferd (for uploads): a file in the data directory, its size and sha256.
package struct Blob: Sendable, Equatable {
    package let id: String
    package let size: Int64
    package let sha256: String
    package let createdAt: Timestamp
    /// The task (`session/task`) whose inline body this blob holds, if it is one.
    package let owner: String?
    /// The principal that stored a client's blob (nil: one stored before there were principals).
    package let principal: String?

    package init(id: String, size: Int64, sha256: String, createdAt: Timestamp, owner: String? = nil, principal: String? = nil) {
        self.id = id
        self.size = size
        self.sha256 = sha256
        self.createdAt = createdAt
        self.owner = owner
        self.principal = principal
    }

    package func encode(into json: inout JSONWriter) {
        json.beginObject()
        json.key("id"); json.string(id)
        json.key("size"); json.int(size)
        json.key("sha256"); json.string(sha256)
        json.key("created_at"); json.string(createdAt.rfc3339)
        json.endObject()
    }

    /// `b_` and 20 characters of `[a-z0-9]`.
    package static func newID() -> String { "b_" + RandomID.make() }

    package static func isValidID(_ id: String) -> Bool {
        id.hasPrefix("b_") && id.utf8.count == 22 && id.utf8.dropFirst(2).allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) }
    }
}
