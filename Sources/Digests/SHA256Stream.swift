/// SHA-256 over bytes fed in pieces: a `DigestSet` of sha256 alone, for callers that want that
/// one digest. Used by one thread at a time.
public final class SHA256Stream: @unchecked Sendable {
    private let digests = DigestSet([.sha256])

    public init() {}

    public func update(_ bytes: UnsafeRawBufferPointer) {
        digests.update(bytes)
    }

    /// The digest in lowercase hex, the form every digest takes in the API. Ends the stream.
    public func finalizeHex() -> String {
        digests.finalize()[.sha256]!
    }

    /// Lowercase hex of any bytes (digests, MACs).
    public static func hex<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        Hex.lowercase(bytes)
    }
}
