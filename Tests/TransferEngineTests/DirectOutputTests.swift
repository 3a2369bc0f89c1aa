import Digests
import Glibc
import Reactor
import TestSupport
import Testing
@testable import TransferEngine

/// `DirectOutput` on a real file of this machine's /tmp (ext4, which takes O_DIRECT), with the
/// `FileHasher` it hands its chunks to. Serialized: the process-wide limit is counted here.
@Suite(.serialized) struct DirectOutputTests {
    /// A file holding `prefix`: what a resumed download already had.
    static func file(holding prefix: [UInt8]) -> Int32 {
        let (fd, path) = temporaryFile()
        unlink(path)
        _ = prefix.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        return fd
    }

    static func contents(of fd: Int32) -> [UInt8] {
        var st = stat()
        fstat(fd, &st)
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        _ = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        return bytes
    }

    /// Pieces of the sizes curl hands over: uneven, some larger than a chunk's room.
    static func pieces(of bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var pieces: [ArraySlice<UInt8>] = []
        var at = 0
        var size = 1
        while at < bytes.count {
            let n = min(bytes.count - at, size)
            pieces.append(bytes[at..<(at + n)])
            at += n
            size = (size * 7 + 12_345) % (1 << 20) + 1
        }
        return pieces
    }

    /// A download continued at an unaligned offset: the bytes up to the next block boundary are
    /// written buffered, the rest from chunks of 1 MiB written in order from that boundary, and
    /// the last, partial chunk on close. The file ends up exactly the prefix and every piece.
    @Test func writesEveryPieceInOrderFromTheNextBlockBoundary() throws {
        let prefix = TestOrigin.content(5000)
        let body = (0..<(3 << 20) + 777).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let fd = Self.file(holding: prefix)
        defer { close(fd) }
        let handed = Locked<[(offset: Int64, bytes: [UInt8])]>([])
        let output = try #require(DirectOutput.open(file: fd, at: Int64(prefix.count)) { chunk in
            handed.withLock { $0.append((chunk.offset, Array(chunk.contents))) }
            chunk.pool?.give(chunk)
        })
        for piece in Self.pieces(of: body) {
            let room = output.hasRoom(for: piece.count, orWait: {})
            #expect(room)
            try piece.withUnsafeBytes { try output.append($0, at: 0) }
        }
        #expect(output.position == Int64(prefix.count + body.count))
        try output.close()

        #expect(Self.contents(of: fd) == prefix + body)
        let chunks = handed.withLock { $0 }
        #expect(chunks.first?.offset == 8192)
        #expect(chunks.dropLast().allSatisfy { $0.bytes.count == DirectOutput.chunkSize })
        #expect(zip(chunks, chunks.dropFirst()).allSatisfy { $0.offset + Int64($0.bytes.count) == $1.offset })
        #expect(chunks.flatMap(\.bytes) == Array(body[(8192 - prefix.count)...]))
    }

    /// Chunks the hasher has not given back are memory the download holds: at four the output
    /// has no room, and the waiter runs when one comes back.
    @Test func aHasherBehindHoldsTheDownloadBack() throws {
        let fd = Self.file(holding: [])
        defer { close(fd) }
        let away = Locked<[StagedChunk]>([])
        let output = try #require(DirectOutput.open(file: fd, at: 0) { chunk in away.withLock { $0.append(chunk) } })
        let piece = [UInt8](repeating: 7, count: DirectOutput.chunkSize)
        let woken = Locked(0)
        for _ in 0..<(DirectOutput.chunksPerOutput - 1) {
            let room = output.hasRoom(for: piece.count, orWait: {})
            #expect(room)
            try piece.withUnsafeBytes { try output.append($0, at: 0) }
        }
        #expect(away.withLock { $0.count } == DirectOutput.chunksPerOutput - 1)
        let roomForAFourth = output.hasRoom(for: piece.count, orWait: { woken.withLock { $0 += 1 } })
        #expect(!roomForAFourth)
        #expect(woken.withLock { $0 } == 0)

        let back = try #require(away.withLock { $0.removeFirst() })
        back.pool?.give(back)
        #expect(woken.withLock { $0 } == 1)
        let roomAgain = output.hasRoom(for: piece.count, orWait: {})
        #expect(roomAgain)
        try output.close()
        #expect(Self.contents(of: fd).count == (DirectOutput.chunksPerOutput - 1) * DirectOutput.chunkSize)
    }

    /// The hasher reads the file's earlier bytes and takes the rest from the chunks: the digests
    /// are those of the whole file, in every algorithm.
    @Test func theHasherGivesTheDigestsOfTheWholeFile() async throws {
        let prefix = TestOrigin.content(300_001)
        let body = TestOrigin.content((5 << 20) + 4093)
        let fd = Self.file(holding: prefix)
        defer { close(fd) }
        let algorithms = DigestAlgorithm.allCases
        let hasher = FileHasher(fd: fd, algorithms: algorithms)
        let output = try #require(DirectOutput.open(file: fd, at: Int64(prefix.count)) { hasher.stage($0) })
        for piece in Self.pieces(of: body) {
            let room = ThreadSignal()
            if !output.hasRoom(for: piece.count, orWait: { room.post() }) { room.wait() }
            try piece.withUnsafeBytes { try output.append($0, at: 0) }
        }
        try output.close()
        let got: [DigestAlgorithm: String]? = await withCheckedContinuation { done in
            hasher.finish(size: Int64(prefix.count + body.count)) { done.resume(returning: $0) }
        }
        let whole = DigestSet(algorithms)
        (prefix + body).withUnsafeBytes { whole.update($0) }
        #expect(got == whole.finalize())
        #expect(Self.contents(of: fd) == prefix + body)
    }

    /// A hasher that cannot read the file back (here: a write-only descriptor, for the bytes
    /// before the first chunk) gives no digest, and still gives every chunk back: the download
    /// goes on instead of waiting for chunks forever.
    @Test func aHasherThatCannotReadGivesItsChunksBack() async throws {
        let fd = Self.file(holding: TestOrigin.content(5000))
        defer { close(fd) }
        let writeOnly = open("/proc/self/fd/\(fd)", O_WRONLY)
        defer { close(writeOnly) }
        let hasher = FileHasher(fd: writeOnly, algorithms: [.sha256])
        let output = try #require(DirectOutput.open(file: fd, at: 5000) { hasher.stage($0) })
        let piece = [UInt8](repeating: 1, count: DirectOutput.chunkSize)
        for _ in 0..<(DirectOutput.chunksPerOutput * 3) {
            var waited = 0
            while !output.hasRoom(for: piece.count, orWait: {}) && waited < 5000 {
                usleep(1000)
                waited += 1
            }
            #expect(waited < 5000, "no chunk came back")
            try piece.withUnsafeBytes { try output.append($0, at: 0) }
        }
        try output.close()
        let got: [DigestAlgorithm: String]? = await withCheckedContinuation { done in
            hasher.finish(size: 5000 + Int64(piece.count * DirectOutput.chunksPerOutput * 3)) { done.resume(returning: $0) }
        }
        #expect(got == nil)
    }

    /// A slow download: bytes that waited in the chunk for `holdLimit` have their whole blocks
    /// written at the next piece, without waiting for the chunk to fill; the rest of the block
    /// starts the next chunk, so later direct writes stay aligned and the file stays a prefix.
    @Test func blocksHeldPastTheLimitAreWrittenBeforeTheChunkFills() throws {
        let body = TestOrigin.content(3 * DirectOutput.alignment + 1000)
        let fd = Self.file(holding: [])
        defer { close(fd) }
        let handed = Locked<[(offset: Int64, count: Int)]>([])
        let output = try #require(DirectOutput.open(file: fd, at: 0) { chunk in
            handed.withLock { $0.append((chunk.offset, chunk.count)) }
            chunk.pool?.give(chunk)
        })
        let limit = DirectOutput.holdLimit
        try body[..<10_000].withUnsafeBytes { try output.append($0, at: 5 * limit) }
        try body[10_000..<12_000].withUnsafeBytes { try output.append($0, at: 6 * limit - 1) }
        #expect(Self.contents(of: fd).isEmpty, "written before the first bytes waited the limit")
        try body[12_000...].withUnsafeBytes { try output.append($0, at: 6 * limit) }
        #expect(Self.contents(of: fd) == Array(body[..<(3 * DirectOutput.alignment)]))
        #expect(handed.withLock { $0 }.map(\.offset) == [0])
        try output.close()
        #expect(Self.contents(of: fd) == body)
        #expect(handed.withLock { $0 }.map(\.offset) == [0, Int64(3 * DirectOutput.alignment)])
    }

    /// Abandoned (a fenced attempt), the output writes nothing of what its chunk holds: the file
    /// keeps what was written before.
    @Test func anAbandonedOutputWritesNothingMore() throws {
        let body = TestOrigin.content(3 * DirectOutput.alignment)
        let fd = Self.file(holding: [])
        defer { close(fd) }
        let output = try #require(DirectOutput.open(file: fd, at: 0) { chunk in chunk.pool?.give(chunk) })
        try body[..<5000].withUnsafeBytes { try output.append($0, at: 0) }
        try body[5000...].withUnsafeBytes { try output.append($0, at: DirectOutput.holdLimit) }
        let written = Self.contents(of: fd)
        #expect(written == body)
        try body[..<100].withUnsafeBytes { try output.append($0, at: DirectOutput.holdLimit) }
        output.abandon()
        #expect(Self.contents(of: fd) == written)
        try output.close()
        #expect(Self.contents(of: fd) == written)
    }

    /// Network file systems keep the page cache: a direct write there is a round trip per chunk.
    @Test func networkFileSystemsStayBuffered() {
        #expect(DirectOutput.suitsDirectWrites(filesystem: 0xEF53))  // ext4
        #expect(DirectOutput.suitsDirectWrites(filesystem: 0x5846_5342))  // XFS
        for network in [0x6969, 0xFF53_4D42, 0x6573_5546, 0x00C3_6400] {  // NFS, CIFS, FUSE, Ceph
            #expect(!DirectOutput.suitsDirectWrites(filesystem: network))
        }
    }

    /// At most `maximumOutputs` downloads hold chunks at once; the next one is written buffered
    /// (no output) until one closes.
    @Test func theNumberOfOutputsIsBounded() throws {
        let fd = Self.file(holding: [])
        defer { close(fd) }
        var open: [DirectOutput] = []
        while open.count <= DirectOutput.maximumOutputs, let output = DirectOutput.open(file: fd, at: 0, handOff: { _ in }) {
            open.append(output)
        }
        #expect(open.count == DirectOutput.maximumOutputs)
        try open.removeLast().close()
        let next = try #require(DirectOutput.open(file: fd, at: 0, handOff: { _ in }))
        try next.close()
        for output in open { try output.close() }
    }
}
