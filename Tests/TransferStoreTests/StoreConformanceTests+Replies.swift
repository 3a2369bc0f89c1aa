import Testing
@testable import TransferModel
@testable import TransferStore

/// Replies kept for `Idempotency-Key`: read back whole until they expire, replaced by scope, and
/// the expired ones gone once another is kept.
extension StoreConformanceTests {
    private static func reply(_ scope: String, expiresAt: Int64, body: String = #"{"status":"queued"}"#) -> StoredReply {
        StoredReply(scope: scope, bodyHash: "ab12", status: 202, headers: "Content-Type: application/json\nETag: \"1\"\n",
                    body: Array(body.utf8), expiresAt: Timestamp(milliseconds: expiresAt))
    }

    @Test(arguments: StoreKind.allCases) func keptRepliesReadBackUntilTheyExpire(kind: StoreKind) throws {
        try kind.withStore { store in
            let first = Self.reply("alice POST /v1/blobs k1", expiresAt: 2_000)
            try store.apply([.keepReply(first, now: Timestamp(milliseconds: 1_000))])
            #expect(try store.reply(scope: first.scope, now: Timestamp(milliseconds: 1_500)) == first)
            #expect(try store.reply(scope: "bob POST /v1/blobs k1", now: Timestamp(milliseconds: 1_500)) == nil)
            #expect(try store.reply(scope: first.scope, now: Timestamp(milliseconds: 2_000)) == nil)

            let replaced = Self.reply(first.scope, expiresAt: 9_000, body: "{}")
            try store.apply([.keepReply(replaced, now: Timestamp(milliseconds: 1_000))])
            #expect(try store.reply(scope: first.scope, now: Timestamp(milliseconds: 1_500)) == replaced)

            // Keeping one at a later time drops those expired by then.
            let other = Self.reply("alice POST /v1/blobs k2", expiresAt: 20_000)
            try store.apply([.keepReply(other, now: Timestamp(milliseconds: 10_000))])
            #expect(try store.reply(scope: first.scope, now: Timestamp(milliseconds: 0)) == nil)
            #expect(try store.reply(scope: other.scope, now: Timestamp(milliseconds: 10_000)) == other)
        }
    }
}
