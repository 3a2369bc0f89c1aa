import HTTPServer

/// Bytes handed to transferd (PRODUCT.md "Blobs"): a file in the data directory, its size and sha256.
struct Blob: Sendable, Equatable {
    let id: String
    let size: Int64
    let sha256: String
    let createdAt: Timestamp
    /// The task (`session/task`) whose inline body this blob holds, if it is one.
    let owner: String?

    func encode(into json: inout JSONWriter) {
        json.beginObject()
        json.key("id"); json.string(id)
        json.key("size"); json.int(size)
        json.key("sha256"); json.string(sha256)
        json.key("created_at"); json.string(createdAt.rfc3339)
        json.endObject()
    }

    /// `b_` and 20 characters of `[a-z0-9]`.
    static func newID() -> String { "b_" + TaskCoordinator.newTaskID() }

    static func isValidID(_ id: String) -> Bool {
        id.hasPrefix("b_") && id.utf8.count == 22 && id.utf8.dropFirst(2).allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) }
    }
}
