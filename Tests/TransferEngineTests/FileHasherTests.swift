import Digests
import Glibc
import TestSupport
import Testing
import TransferEngine

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
}
