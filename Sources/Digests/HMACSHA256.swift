import COpenSSL

/// HMAC-SHA256 (RFC 2104) by libcrypto, the one crypto library the process links: it signs
/// webhooks (Standard Webhooks) and resume data.
public enum HMACSHA256 {
    /// The 32-byte authentication code of `message` under `key`.
    public static func code(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        // HMAC() reads a NULL key as "no key": an empty key is passed as a valid pointer, length 0.
        let keyStorage = key.isEmpty ? [0] : key
        let result = keyStorage.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                HMAC(EVP_sha256(), k.baseAddress, Int32(key.count),
                     m.baseAddress?.assumingMemoryBound(to: UInt8.self), m.count, &mac, &length)
            }
        }
        precondition(result != nil, "HMAC-SHA256 is unavailable in libcrypto")
        return Array(mac.prefix(Int(length)))
    }
}
