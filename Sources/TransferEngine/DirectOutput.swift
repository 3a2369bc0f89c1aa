import CLinux
import Glibc
import Synchronization
import TransferVocabulary

/// Writes a large download to its file with O_DIRECT (loop thread): each piece curl hands over is
/// copied into an aligned chunk, a full chunk is written, and then handed to the file's hasher,
/// which hashes it from memory.
///
/// Why: on ext4 here, writing 1 GiB through the page cache costs about 1 s of CPU (page
/// allocation, dirty accounting, delayed allocation, then writeback by the kernel), and the hasher
/// read it all back; with O_DIRECT the same GiB costs 0.06 s of CPU and 0.4 s of waiting for the
/// device, which leaves the two cores to the network, the hash and the origin (docs/PERFORMANCE.md).
///
/// The direct descriptor is an open file description of its own (`transferd_open_direct`), so the
/// output's descriptor stays buffered for the hasher's reads of earlier bytes, for the tail that
/// is not a whole block and for the fsync that ends the download. Direct writes start at the first
/// block boundary at or after where the download continues; bytes before it are written buffered.
/// What is written is always a prefix of the file: chunks are written in order, so a crash leaves
/// a file that a resumed download can continue. A slow download does not fill a chunk for a long
/// time; whole blocks held longer than `holdLimit` are written without waiting for the rest, so
/// after `kill -9` (or a takeover by another replica) it continues from what arrived up to a tenth
/// of a second before, almost as a buffered download would, instead of from the start of the
/// chunk (at 1 MiB/s: a second).
final class DirectOutput {
    static let alignment = 4096
    static let chunkSize = 1 << 20
    static let chunksPerOutput = 4
    /// A response shorter than this is written through the page cache: it gains little, and its
    /// chunks would be memory held for a small file.
    static let minimumLength: Int64 = 16 << 20
    /// Downloads written this way at once, process-wide: their chunks (up to 4 MiB each) are
    /// resident memory, where the page cache's pages are not counted against the service.
    static let maximumOutputs = 16
    /// How long received bytes may wait in a chunk (monotonic ns) before their whole blocks are
    /// written. A fast download fills its chunks well within it and never writes less than one;
    /// one slower than 10 MiB/s writes ten times a second, a cost nobody notices at that rate.
    static let holdLimit: UInt64 = 100_000_000
    private static let outputs = Atomic<Int>(0)

    let pool: ChunkPool
    private let fileFD: Int32
    /// -1 once the file system refused a direct write: the rest is written buffered.
    private var directFD: Int32
    /// Where the next byte goes in the file.
    private(set) var position: Int64
    /// The first byte written from a chunk (a block boundary).
    private let start: Int64
    private var current: StagedChunk
    /// A chunk taken ahead by `hasRoom`, so that `append` never waits.
    private var spare: StagedChunk?
    /// Where written chunks go: the hasher, or straight back to the pool.
    private let handOff: (StagedChunk) -> Void
    private var closed = false
    /// When the oldest byte in `current` arrived (monotonic ns); nil while it is empty.
    private var heldSince: UInt64?

    /// nil when the download stays buffered: its file system is a network one, enough direct
    /// outputs run already, or the file cannot be opened with O_DIRECT (its file system refuses
    /// it, /proc is not mounted).
    static func open(file fd: Int32, at offset: Int64, handOff: @escaping (StagedChunk) -> Void) -> DirectOutput? {
        guard suitsDirectWrites(filesystem: Int(transferd_filesystem_type(fd))) else { return nil }
        guard outputs.add(1, ordering: .relaxed).newValue <= maximumOutputs else {
            outputs.subtract(1, ordering: .relaxed)
            return nil
        }
        let direct = transferd_open_direct(fd)
        guard direct >= 0 else {
            outputs.subtract(1, ordering: .relaxed)
            return nil
        }
        return DirectOutput(fileFD: fd, directFD: direct, at: offset, handOff: handOff)
    }

    private init(fileFD: Int32, directFD: Int32, at offset: Int64, handOff: @escaping (StagedChunk) -> Void) {
        self.fileFD = fileFD
        self.directFD = directFD
        self.handOff = handOff
        position = offset
        let block = Int64(DirectOutput.alignment)
        start = (offset + block - 1) / block * block
        pool = ChunkPool(chunkSize: DirectOutput.chunkSize, limit: DirectOutput.chunksPerOutput)
        current = pool.take(beyondLimit: true) {}!
        current.offset = start
    }

    deinit { release() }

    /// statfs(2) magic numbers of network and FUSE file systems: NFS, SMB, SMB2, CIFS, Ceph,
    /// FUSE, 9P, AFS, Lustre. There a direct write is a synchronous round trip to a server, and
    /// it would hold the loop that long for every chunk; the page cache lets the client write
    /// behind. (A shared volume of a cluster's replicas is often one of these.)
    private static let networkFilesystems: Set<Int> = [0x6969, 0x517B, 0xFE53_4D42, 0xFF53_4D42, 0x00C3_6400,
                                                        0x6573_5546, 0x0102_1997, 0x5346_414F, 0x0BD0_0BD0]

    static func suitsDirectWrites(filesystem type: Int) -> Bool { !networkFilesystems.contains(type) }

    /// Whether a piece of `count` bytes can be taken without waiting for a chunk; if not,
    /// `waiter` runs (on the hasher's thread) once one comes back. The waiter is only made then.
    func hasRoom(for count: Int, orWait waiter: @autoclosure () -> @Sendable () -> Void) -> Bool {
        // A piece that fills the chunk needs the next one: `append` replaces a full chunk at once.
        let buffered = Int(max(0, min(Int64(count), start - position)))
        if count - buffered < current.remaining || spare != nil { return true }
        spare = pool.take(orWait: waiter())
        return spare != nil
    }

    /// Takes the piece (arrived at `now`, monotonic ns): written at once where it precedes
    /// `start`, else copied into chunks, each written as it fills or once its first bytes have
    /// waited `holdLimit`.
    func append(_ data: UnsafeRawBufferPointer, at now: UInt64) throws(TransferFailure) {
        var rest = data
        if position < start {
            let buffered = Int(min(Int64(rest.count), start - position))
            do {
                try FileWrite.all(fileFD, UnsafeRawBufferPointer(rebasing: rest.prefix(buffered)), at: position)
            } catch {
                throw error.transferFailure
            }
            position += Int64(buffered)
            rest = UnsafeRawBufferPointer(rebasing: rest.dropFirst(buffered))
        }
        while !rest.isEmpty {
            if current.count == 0 { heldSince = now }
            let n = min(current.remaining, rest.count)
            (current.bytes + current.count).copyMemory(from: rest.baseAddress!, byteCount: n)
            current.count += n
            position += Int64(n)
            rest = UnsafeRawBufferPointer(rebasing: rest.dropFirst(n))
            if current.remaining == 0 {
                let full = current
                current = spare ?? pool.take(beyondLimit: true) {}!
                spare = nil
                current.offset = full.end
                heldSince = nil
                try flush(full, direct: full.count)
            }
        }
        if let heldSince, now &- heldSince >= DirectOutput.holdLimit, current.count >= DirectOutput.alignment {
            try writeHeldBlocks(at: now)
        }
    }

    /// Writes the whole blocks of a chunk that has waited too long, and hands them on; the bytes
    /// past the last whole block start the next chunk (direct writes stay block-aligned).
    private func writeHeldBlocks(at now: UInt64) throws(TransferFailure) {
        let held = current
        let whole = held.count / DirectOutput.alignment * DirectOutput.alignment
        current = spare ?? pool.take(beyondLimit: true) {}!
        spare = nil
        current.offset = held.offset + Int64(whole)
        current.count = held.count - whole
        current.bytes.copyMemory(from: held.bytes + whole, byteCount: current.count)
        held.count = whole
        heldSince = current.count > 0 ? now : nil
        try flush(held, direct: whole)
    }

    /// Writes what the last chunk holds (its whole blocks direct, the rest buffered) and lets go
    /// of the direct descriptor: the file then holds every byte appended. On every end of the
    /// transfer, so that a failed or stopped download's file is whole up to where it stopped.
    func close() throws(TransferFailure) {
        guard !closed else { return }
        let chunk = current
        guard chunk.count > 0 else { return abandon() }
        defer { letGo() }
        try flush(chunk, direct: chunk.count / DirectOutput.alignment * DirectOutput.alignment)
    }

    /// Lets go of the chunks and the direct descriptor without writing what the last chunk holds
    /// (a fenced attempt: the file may be another replica's now). The file holds a prefix of the
    /// download, as after a crash.
    func abandon() {
        guard !closed else { return }
        pool.give(current)
        letGo()
    }

    private func letGo() {
        if let spare { pool.give(spare) }
        spare = nil
        pool.close()
        release()
    }

    private func release() {
        guard !closed else { return }
        closed = true
        if directFD >= 0 { Glibc.close(directFD) }
        directFD = -1
        DirectOutput.outputs.subtract(1, ordering: .relaxed)
    }

    /// Writes the chunk — its first `direct` bytes direct, the rest buffered — and hands it on.
    /// A direct write the file system refuses (EINVAL: an alignment it needs beyond 4 KiB) is
    /// done again buffered, and so is every later one.
    private func flush(_ chunk: StagedChunk, direct: Int) throws(TransferFailure) {
        let bytes = chunk.contents
        do throws(FileWrite.Failure) {
            if directFD >= 0 && direct > 0 {
                do throws(FileWrite.Failure) {
                    try FileWrite.all(directFD, UnsafeRawBufferPointer(rebasing: bytes.prefix(direct)), at: chunk.offset)
                } catch where error.errno == EINVAL {
                    Glibc.close(directFD)
                    directFD = -1
                }
            }
            let buffered = directFD >= 0 ? direct : 0
            try FileWrite.all(fileFD, UnsafeRawBufferPointer(rebasing: bytes.dropFirst(buffered)), at: chunk.offset + Int64(buffered))
        } catch {
            pool.give(chunk)
            throw error.transferFailure
        }
        handOff(chunk)
    }
}
