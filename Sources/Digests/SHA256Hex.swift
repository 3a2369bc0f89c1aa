import COpenSSL

/// Lowercase hex SHA-256 of bytes held in memory (a blob spooled whole, a request body), the form
/// every digest takes in the API.
public enum SHA256Hex {
    public static func of(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &digest, &length, EVP_sha256(), nil) }
        precondition(ok == 1, "SHA-256 is unavailable in libcrypto")
        return SHA256Stream.hex(digest.prefix(Int(length)))
    }
}
