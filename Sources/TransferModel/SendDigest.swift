import Digests

/// `upload.send_digest`: the digest of the request body sent as `Repr-Digest` (RFC 9530 §3), so
/// the receiver can verify what arrived. Named as the field names it: RFC 9530's active
/// algorithms.
package enum SendDigest: String, Sendable, CaseIterable {
    case sha256 = "sha-256"
    case sha512 = "sha-512"

    package var algorithm: DigestAlgorithm {
        switch self {
        case .sha256: .sha256
        case .sha512: .sha512
        }
    }

    /// `Repr-Digest: sha-256=:<base64>:` for a body of digest `hex`.
    package func header(hex: String) -> (String, String) {
        ("Repr-Digest", "\(rawValue)=:\(DigestBase64.encode(Hex.decode(hex) ?? [])):")
    }

    static func parse(_ text: String?, field: @autoclosure () -> String) throws(Refusal) -> SendDigest? {
        guard let text else { return nil }
        guard let digest = SendDigest(rawValue: text) else {
            throw Refusal.invalid(field(), "must be one of \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return digest
    }
}
