import COpenSSL

/// Several digests of one byte stream, fed in pieces (one thread at a time).
///
/// One object for all the algorithms a transfer asked for, so the caller feeds each piece once
/// while the bytes are still in cache, and an empty set costs one branch per piece.
public final class DigestSet: @unchecked Sendable {
    public let algorithms: [DigestAlgorithm]
    /// One libcrypto context per SHA/MD5 algorithm, in the order of `contextAlgorithms`.
    private let contexts: [OpaquePointer]
    private let contextAlgorithms: [DigestAlgorithm]
    /// The running CRC-32C, when asked for (a plain value: no context to allocate).
    private var crc: UInt32?
    private var finished = false

    /// Duplicates are ignored; `[]` computes nothing (update is then about free).
    public init(_ algorithms: [DigestAlgorithm]) {
        var unique: [DigestAlgorithm] = []
        for algorithm in algorithms where !unique.contains(algorithm) { unique.append(algorithm) }
        self.algorithms = unique
        contextAlgorithms = unique.filter { $0.evp != nil }
        contexts = contextAlgorithms.map { algorithm in
            guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, algorithm.evp, nil) == 1 else {
                preconditionFailure("\(algorithm) is unavailable in libcrypto")
            }
            return context
        }
        crc = unique.contains(.crc32c) ? 0 : nil
    }

    deinit { contexts.forEach { EVP_MD_CTX_free($0) } }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        for context in contexts { _ = EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) }
        if let running = crc { crc = CRC32C.update(running, bytes) }
    }

    /// Ends the stream: each algorithm's digest as lowercase hex (crc32c: the 4 bytes big-endian,
    /// 8 hex digits, as GCS's x-goog-hash carries them base64-encoded). Called once.
    public func finalize() -> [DigestAlgorithm: String] {
        precondition(!finished, "a DigestSet is finalized once")
        finished = true
        var digests: [DigestAlgorithm: String] = [:]
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        for (algorithm, context) in zip(contextAlgorithms, contexts) {
            var length: UInt32 = 0
            precondition(EVP_DigestFinal_ex(context, &digest, &length) == 1, "\(algorithm) failed in libcrypto")
            digests[algorithm] = Hex.lowercase(digest.prefix(Int(length)))
        }
        if let crc {
            digests[.crc32c] = Hex.lowercase([24, 16, 8, 0].map { UInt8(truncatingIfNeeded: crc >> $0) })
        }
        return digests
    }
}
