/// Several digests of one byte stream, fed in pieces (one thread at a time).
///
/// One object for all the algorithms a transfer asked for, so the caller feeds each piece once
/// while the bytes are still in cache, and an empty set costs one branch per piece. Its state can
/// be saved (`checkpoint`) and a set continued from it (`init(restoring:)`).
public final class DigestSet: @unchecked Sendable {
    public let algorithms: [DigestAlgorithm]
    private let contexts: [DigestContext]
    private var finished = false

    /// Duplicates are ignored; `[]` computes nothing (update is then about free).
    public init(_ algorithms: [DigestAlgorithm]) {
        var unique: [DigestAlgorithm] = []
        for algorithm in algorithms where !unique.contains(algorithm) { unique.append(algorithm) }
        self.algorithms = unique
        contexts = unique.map(DigestContext.init)
    }

    /// A set continued from a `checkpoint`'s states; nil when one cannot be restored (saved by a
    /// build whose contexts have another layout): the caller then starts over from the first byte.
    public init?(restoring states: [DigestAlgorithm: [UInt8]]) {
        var contexts: [DigestContext] = []
        for algorithm in DigestAlgorithm.allCases {
            guard let state = states[algorithm] else { continue }
            guard let context = DigestContext(algorithm, state: state) else {
                contexts.forEach { $0.free() }
                return nil
            }
            contexts.append(context)
        }
        algorithms = contexts.map(\.algorithm)
        self.contexts = contexts
    }

    deinit { contexts.forEach { $0.free() } }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        for context in contexts { context.update(bytes) }
    }

    /// Each algorithm's running state, for `init(restoring:)`. The set goes on as before.
    public func checkpoint() -> [DigestAlgorithm: [UInt8]] {
        precondition(!finished, "a finalized DigestSet has no state")
        return Dictionary(uniqueKeysWithValues: contexts.map { ($0.algorithm, $0.state) })
    }

    /// Ends the stream: each algorithm's digest as lowercase hex (crc32c: the 4 bytes big-endian,
    /// 8 hex digits, as GCS's x-goog-hash carries them base64-encoded). Called once.
    public func finalize() -> [DigestAlgorithm: String] {
        precondition(!finished, "a DigestSet is finalized once")
        finished = true
        return Dictionary(uniqueKeysWithValues: contexts.map { ($0.algorithm, Hex.lowercase($0.finalize())) })
    }
}
