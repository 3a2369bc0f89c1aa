import Digests
import JSON

/// Standard Webhooks signatures: `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
/// keyed with the base64 part of the `whsec_` secret.
enum WebhookSigner {
    static func headers(id: String, timestamp: Int64, body: [UInt8], key: [UInt8]) -> [(String, String)] {
        var signed = Array("\(id).\(timestamp).".utf8)
        signed.append(contentsOf: body)
        let mac = HMACSHA256.code(for: signed, key: key)
        return [
            ("webhook-id", id),
            ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", "v1," + Base64.encode(mac)),
        ]
    }
}
