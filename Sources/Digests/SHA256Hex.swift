import COpenSSL

/// Lowercase hex SHA-256 of bytes held in memory (a blob spooled whole, a request body), the form
/// every digest takes in the API.
public enum SHA256Hex {
    public static func of(_ bytes: [UInt8]) -> String {
        Hex.lowercase(bytes.withUnsafeBytes { SHA256Digest.of($0) })
    }
}

/// The 32 bytes of the SHA-256 of bytes held in memory (a presented bearer token, to look up).
public enum SHA256Digest {
    public static func of(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Int(SHA256_DIGEST_LENGTH)) { buffer, count in
            _ = SHA256(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, buffer.baseAddress)
            count = Int(SHA256_DIGEST_LENGTH)
        }
    }
}
