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
}
