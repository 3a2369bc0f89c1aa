import Digests
import Glibc
import Reactor
import TestSupport
import Testing
@testable import TransferEngine

struct FileHasherTests {
    /// Writes `bytes` to a new temporary file and returns a descriptor open on it.
    static func file(_ bytes: [UInt8]) -> Int32 {
        let (fd, path) = temporaryFile()
        unlink(path)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        return fd
    }

    /// A small file is hashed by whoever finishes it, with no hop to a pool thread: its digest is
    /// there when `finish` returns.
    @Test func aSmallFileIsHashedBeforeFinishReturns() {
        let bytes = TestOrigin.content(16 << 10)
        let fd = Self.file(bytes)
        defer { close(fd) }
        var digest: String?
        FileHasher(fd: fd, algorithms: [.sha256]).finish(size: Int64(bytes.count)) { digest = $0?[.sha256] }
        #expect(digest == TestOrigin.sha256(bytes))
    }

    /// The first 64 KiB of a file are hashed from the writer's buffer as they are written: the
    /// hasher here cannot read its file (a write-only descriptor) and still has the digests.
    @Test func aSmallFileIsHashedAsItIsWrittenNotReadBack() throws {
        let bytes = TestOrigin.content(40_000)
        let fd = Self.file([])
        defer { close(fd) }
        let writeOnly = open("/proc/self/fd/\(fd)", O_WRONLY)
        defer { close(writeOnly) }
        let hasher = FileHasher(fd: writeOnly, algorithms: [.sha256, .md5])
        var offset = 0
        for size in [1, 9_999, 16_384, 13_616] {
            bytes[offset..<(offset + size)].withUnsafeBytes { hasher.written($0, at: Int64(offset)) }
            offset += size
        }
        var digests: [DigestAlgorithm: String]?
        hasher.finish(size: Int64(bytes.count)) { digests = $0 }
        let want = DigestSet([.sha256, .md5])
        bytes.withUnsafeBytes { want.update($0) }
        #expect(digests == want.finalize())
    }

    /// A hasher hands out a checkpoint every 64 MiB it hashes; one continued from a checkpoint
    /// reads the file only from there and still gives the digests of the whole file.
    @Test func checkpointsEvery64MiBAndContinuesFromOne() async throws {
        let step = Int(FileHasher.checkpointStep)
        // A 64 KiB pattern repeated (appended whole: built byte by byte it takes seconds in a debug build).
        let block = (0..<(64 << 10)).map { UInt8(truncatingIfNeeded: $0 ^ ($0 >> 11)) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(step + step / 2 + 7)
        while bytes.count < step + step / 2 { bytes += block }
        bytes += [1, 2, 3, 4, 5, 6, 7]
        let fd = Self.file(bytes)
        defer { close(fd) }
        let whole = DigestSet([.sha256, .crc32c])
        bytes.withUnsafeBytes { whole.update($0) }
        let want = whole.finalize()

        let taken = Locked<[DigestCheckpoint]>([])
        let first: [DigestAlgorithm: String]? = await withCheckedContinuation { done in
            let hasher = FileHasher(fd: fd, algorithms: [.sha256, .crc32c]) { checkpoint in taken.withLock { $0.append(checkpoint) } }
            hasher.advance(to: Int64(bytes.count))
            hasher.finish(size: Int64(bytes.count)) { done.resume(returning: $0) }
        }
        #expect(first == want)
        let checkpoints = taken.withLock { $0 }
        #expect(checkpoints.map(\.offset) == [Int64(step)])
        let checkpoint = try #require(checkpoints.first)
        #expect(checkpoint.matches(fd: fd))

        let continued = FileHasher(fd: fd, algorithms: [.sha256, .crc32c], continuing: checkpoint)
        #expect(continued.continuedFrom == Int64(step))
        let second: [DigestAlgorithm: String]? = await withCheckedContinuation { done in
            continued.finish(size: Int64(bytes.count)) { done.resume(returning: $0) }
        }
        #expect(second == want)
        // A checkpoint of other algorithms does not serve: hashing starts at the first byte.
        #expect(FileHasher(fd: fd, algorithms: [.sha256], continuing: checkpoint).continuedFrom == 0)
    }
}
