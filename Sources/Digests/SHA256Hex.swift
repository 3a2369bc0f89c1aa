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
        [UInt8](unsafeUninitializedCapacity: Int(EVP_MAX_MD_SIZE)) { buffer, count in
            var length: UInt32 = 0
            let ok = EVP_Digest(bytes.baseAddress, bytes.count, buffer.baseAddress, &length, DigestAlgorithm.sha256.evp, nil)
            precondition(ok == 1, "SHA-256 is unavailable in libcrypto")
            count = Int(length)
        }
    }
}
