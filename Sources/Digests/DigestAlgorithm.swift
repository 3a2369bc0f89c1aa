import COpenSSL

/// The digest algorithms transferd computes over a transfer's bytes.
///
/// The SHA family and MD5 are what origins and package mirrors publish (RFC 9530 `Repr-Digest`,
/// `Content-MD5`, sha512/sha1 sums); CRC-32C is what GCS declares in `x-goog-hash`.
public enum DigestAlgorithm: String, CaseIterable, Sendable, Hashable {
    case sha256, sha512, sha1, md5, crc32c

    /// Length of the digest in bytes (32, 64, 20, 16, 4).
    public var byteCount: Int {
        switch self {
        case .sha256: 32
        case .sha512: 64
        case .sha1: 20
        case .md5: 16
        case .crc32c: 4
        }
    }

    /// libcrypto's implementation, nil for CRC-32C (not a libcrypto digest).
    var evp: OpaquePointer? {
        switch self {
        case .sha256: EVPAlgorithms.sha256
        case .sha512: EVPAlgorithms.sha512
        case .sha1: EVPAlgorithms.sha1
        case .md5: EVPAlgorithms.md5
        case .crc32c: nil
        }
    }
}

/// Each fetched once: `EVP_sha256()` and its kin look the provider's implementation up again at
/// every context initialization, which costs more than hashing a small piece.
private enum EVPAlgorithms {
    nonisolated(unsafe) static let sha256 = fetch("SHA256")
    nonisolated(unsafe) static let sha512 = fetch("SHA512")
    nonisolated(unsafe) static let sha1 = fetch("SHA1")
    nonisolated(unsafe) static let md5 = fetch("MD5")

    private static func fetch(_ name: String) -> OpaquePointer {
        guard let algorithm = EVP_MD_fetch(nil, name, nil) else { preconditionFailure("\(name) is unavailable in libcrypto") }
        return algorithm
    }
}
