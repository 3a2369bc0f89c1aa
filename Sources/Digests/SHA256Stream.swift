import COpenSSL

/// SHA-256 over bytes fed in pieces, by OpenSSL's libcrypto (see COpenSSL/shim.h for why
/// libcrypto). Used by one thread at a time.
public final class SHA256Stream: @unchecked Sendable {
    private let context: OpaquePointer
    /// Fetched once: `EVP_sha256()` would look the implementation up again at every use.
    nonisolated(unsafe) static let algorithm = EVP_MD_fetch(nil, "SHA256", nil)

    public init() {
        context = EVP_MD_CTX_new()
        precondition(EVP_DigestInit_ex(context, SHA256Stream.algorithm, nil) == 1, "SHA-256 is unavailable in libcrypto")
    }

    deinit { EVP_MD_CTX_free(context) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        _ = EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
    }

    /// The digest in lowercase hex, the form every digest takes in the API. Ends the stream.
    public func finalizeHex() -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = EVP_DigestFinal_ex(context, &digest, &length)
        return SHA256Stream.hex(digest.prefix(Int(length)))
    }

    /// Lowercase hex of any bytes (digests, MACs).
    public static func hex<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var n = 0
            for byte in bytes {
                out[n] = digits.utf8Start[Int(byte >> 4)]
                out[n + 1] = digits.utf8Start[Int(byte & 0xF)]
                n += 2
            }
            return n
        }
    }
}
