/// The first successful reply to an acting POST with an `Idempotency-Key`, kept so that a retry
/// (after a restart too) gets it again instead of acting twice.
package struct StoredReply: Sendable, Equatable {
    /// Whose key it was, for which method and path, and the key: no other caller can hit it.
    package var scope: String
    /// sha256 (hex) of the request body the key was first used with.
    package var bodyHash: String
    package var status: Int
    /// The reply's own headers (`Content-Type`, `Location`, `ETag`), as `name: value` lines.
    package var headers: String
    package var body: [UInt8]
    package var expiresAt: Timestamp

    package init(scope: String, bodyHash: String, status: Int, headers: String, body: [UInt8], expiresAt: Timestamp) {
        self.scope = scope
        self.bodyHash = bodyHash
        self.status = status
        self.headers = headers
        self.body = body
        self.expiresAt = expiresAt
    }
}
