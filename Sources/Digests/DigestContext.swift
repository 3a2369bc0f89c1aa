import COpenSSL

/// One algorithm's running digest, in libcrypto's plain context struct (`SHA256_CTX`, `MD5_CTX`, …)
/// or, for CRC-32C, a 32-bit value. Unlike an EVP context it is plain memory, so its state can be
/// saved (`state`) with a download's checkpoint and restored after a restart: the download goes on
/// hashing from where the checkpoint was, instead of reading its partial file again.
///
/// Not copyable in meaning: one owner, `free` once.
struct DigestContext {
    let algorithm: DigestAlgorithm
    private let memory: UnsafeMutableRawPointer

    init(_ algorithm: DigestAlgorithm) {
        self.algorithm = algorithm
        memory = .allocate(byteCount: DigestContext.size(of: algorithm), alignment: 16)
        let ok: Int32
        switch algorithm {
        case .sha256: ok = SHA256_Init(memory.assumingMemoryBound(to: SHA256_CTX.self))
        case .sha512: ok = SHA512_Init(memory.assumingMemoryBound(to: SHA512_CTX.self))
        case .sha1: ok = SHA1_Init(memory.assumingMemoryBound(to: SHA_CTX.self))
        case .md5: ok = MD5_Init(memory.assumingMemoryBound(to: MD5_CTX.self))
        case .crc32c: memory.storeBytes(of: 0, as: UInt32.self); ok = 1
        }
        precondition(ok == 1, "\(algorithm) is unavailable in libcrypto")
    }

    /// A context continued from a saved `state`; nil when the state is not one of this build's
    /// (another size: saved by a libcrypto with another layout).
    init?(_ algorithm: DigestAlgorithm, state: [UInt8]) {
        guard state.count == DigestContext.size(of: algorithm) else { return nil }
        self.algorithm = algorithm
        memory = .allocate(byteCount: state.count, alignment: 16)
        state.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: state.count) }
    }

    static func size(of algorithm: DigestAlgorithm) -> Int {
        switch algorithm {
        case .sha256: MemoryLayout<SHA256_CTX>.size
        case .sha512: MemoryLayout<SHA512_CTX>.size
        case .sha1: MemoryLayout<SHA_CTX>.size
        case .md5: MemoryLayout<MD5_CTX>.size
        case .crc32c: MemoryLayout<UInt32>.size
        }
    }

    func update(_ bytes: UnsafeRawBufferPointer) {
        let p = bytes.baseAddress, n = bytes.count
        switch algorithm {
        case .sha256: _ = SHA256_Update(memory.assumingMemoryBound(to: SHA256_CTX.self), p, n)
        case .sha512: _ = SHA512_Update(memory.assumingMemoryBound(to: SHA512_CTX.self), p, n)
        case .sha1: _ = SHA1_Update(memory.assumingMemoryBound(to: SHA_CTX.self), p, n)
        case .md5: _ = MD5_Update(memory.assumingMemoryBound(to: MD5_CTX.self), p, n)
        case .crc32c: memory.storeBytes(of: CRC32C.update(memory.load(as: UInt32.self), bytes), as: UInt32.self)
        }
    }

    /// The running state, to be restored by `init(_:state:)`.
    var state: [UInt8] { Array(UnsafeRawBufferPointer(start: memory, count: DigestContext.size(of: algorithm))) }

    /// The digest (crc32c: its 4 bytes big-endian, as x-goog-hash carries it). Ends the context.
    func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: algorithm.byteCount)
        let ok: Int32
        switch algorithm {
        case .sha256: ok = SHA256_Final(&digest, memory.assumingMemoryBound(to: SHA256_CTX.self))
        case .sha512: ok = SHA512_Final(&digest, memory.assumingMemoryBound(to: SHA512_CTX.self))
        case .sha1: ok = SHA1_Final(&digest, memory.assumingMemoryBound(to: SHA_CTX.self))
        case .md5: ok = MD5_Final(&digest, memory.assumingMemoryBound(to: MD5_CTX.self))
        case .crc32c:
            let crc = memory.load(as: UInt32.self)
            digest = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: crc >> $0) }
            ok = 1
        }
        precondition(ok == 1, "\(algorithm) failed in libcrypto")
        return digest
    }

    func free() { memory.deallocate() }
}
