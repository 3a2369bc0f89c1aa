import Digests
import Dispatch
import Glibc
import Reactor

/// Computes digests of a file while it is being written, on another core, a step behind the
/// writer: the loop thread only records how far the file is written; a pool thread reads what is
/// new (from the page cache) and hashes it. Hashing inline would serialize it with the download on
/// one core, and SHA-256 on many CPUs runs slower than a loopback download writes.
///
/// The hasher reads from the first byte, so a resumed file's earlier part is hashed too — unless
/// it continues from a `DigestCheckpoint` of that part. Every `checkpointStep` bytes it hands a
/// checkpoint to `checkpointed`, for the caller to keep with the task.
///
/// Two kinds of bytes are not read back: a file's first `finishInline` bytes, hashed by the
/// writer from its own buffer (`written`), and the chunks of a download written with O_DIRECT
/// (`DirectOutput`, `stage`), hashed from memory and given back to their pool. The bytes between
/// are read from the file.
public final class FileHasher: @unchecked Sendable {
    private let fd: Int32
    /// Owned by whichever pool thread runs `work` (one at a time, by `scheduled`).
    private let digests: DigestSet
    private var hashed: Int64 = 0
    /// Where hashing began: the continued checkpoint's offset, else 0.
    public let continuedFrom: Int64
    private let checkpointed: (@Sendable (DigestCheckpoint) -> Void)?
    /// Pool thread (with `hashed`): where the last checkpoint was taken.
    private var lastCheckpoint: Int64
    /// A checkpoint is a few hundred bytes stored with the task: every 64 MiB costs a large
    /// download a handful of small writes, and a small one none.
    public static let checkpointStep: Int64 = 64 << 20
    private let control = Locked(Control())
    /// Loop thread only: where the last scheduling happened, to schedule once per `step`.
    private var lastScheduled: Int64 = 0
    private static let step: Int64 = 4 << 20

    private struct Control {
        var available: Int64 = 0
        var scheduled = false
        var finalSize: Int64?
        var cancelled = false
        /// Written chunks not hashed yet, in file order.
        var staged: [StagedChunk] = []
        var done: (([DigestAlgorithm: String]?) -> Void)?

        /// Marks the hasher scheduled when no pool thread has it; true when the caller must
        /// hand it to one.
        mutating func scheduleIfIdle() -> Bool {
            if scheduled { return false }
            scheduled = true
            return true
        }
    }

    /// `fd` must be readable (pread) and stay open until `finish` or `cancel` has called back.
    /// `continuing`: a checkpoint of the file's first bytes, as they are on disk; used when it
    /// holds exactly `algorithms` and can be restored, else hashing starts at the first byte.
    public init(fd: Int32, algorithms: [DigestAlgorithm], continuing checkpoint: DigestCheckpoint? = nil,
                checkpointed: (@Sendable (DigestCheckpoint) -> Void)? = nil)
    {
        self.fd = fd
        self.checkpointed = checkpointed
        if let checkpoint, checkpoint.covers(algorithms), let restored = DigestSet(restoring: checkpoint.states) {
            digests = restored
            hashed = checkpoint.offset
        } else {
            digests = DigestSet(algorithms)
        }
        continuedFrom = hashed
        lastCheckpoint = hashed
    }

    public var algorithms: [DigestAlgorithm] { digests.algorithms }

    /// The file is written up to `size` (loop thread).
    public func advance(to size: Int64) {
        guard size - lastScheduled >= FileHasher.step else {
            control.withLock { $0.available = size }
            return
        }
        lastScheduled = size
        if control.withLock({ c -> Bool in
            c.available = size
            return c.scheduleIfIdle()
        }) { schedule() }
    }

    /// `bytes` are written at `offset` (loop thread). Within the first `finishInline` bytes of the
    /// file, with nothing before them left to hash, they are hashed right here from the caller's
    /// buffer, still in cache: a small file is never read back. Otherwise as `advance`.
    func written(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        let end = offset + Int64(bytes.count)
        guard end <= Self.finishInline, control.withLock({ c in !c.cancelled && c.available <= offset && c.scheduleIfIdle() }) else {
            return advance(to: end)
        }
        // Scheduled by this call, so `hashed` is this thread's until it lets go below.
        if hashed == offset { consume(bytes) }
        control.withLock { c in
            c.available = max(c.available, end)
            c.scheduled = false
        }
    }

    /// A chunk of the file is written (loop thread): it is hashed from memory, in file order.
    func stage(_ chunk: StagedChunk) {
        if control.withLock({ c -> Bool in
            c.staged.append(chunk)
            c.available = max(c.available, chunk.end)
            return c.scheduleIfIdle()
        }) { schedule() }
    }

    /// What is left to hash at the end, at most, for the caller to hash it itself.
    static let finishInline: Int64 = 64 << 10

    /// The file is complete at `size`: `done` gets the hex digests once everything is hashed. When
    /// no pool thread has the hasher and little is left — all of a small file — the caller hashes
    /// it and `done` runs before this returns: tens of microseconds, where waiting for a pool
    /// thread took tens of milliseconds in a burst of small downloads (the pool's few threads
    /// were busy finishing the files before them).
    public func finish(size: Int64, done: @escaping ([DigestAlgorithm: String]?) -> Void) {
        if control.withLock({ c -> Bool in
            c.available = size
            c.finalSize = size
            c.done = done
            return c.scheduleIfIdle()
        }) {
            // Scheduled by this call, so `hashed` is this thread's until `work` lets go.
            if size - hashed <= Self.finishInline { work() } else { schedule() }
        }
    }

    /// Stops hashing; `done` (with nil) runs once no pool thread touches the file any more.
    public func cancel(done: @escaping ([DigestAlgorithm: String]?) -> Void) {
        if control.withLock({ c -> Bool in
            c.cancelled = true
            c.done = done
            return c.scheduleIfIdle()
        }) { schedule() }
    }

    private func schedule() {
        DispatchQueue.global().async { self.work() }
    }

    private func work() {
        // Pieces of 1 MiB, or what there is for a small file: a buffer of the size a 16 KiB file
        // needs is cheap, a 1 MiB one per small file showed in profiles (malloc_consolidate).
        // Allocated only when something is read from the file: staged chunks need none.
        var buffer: UnsafeMutableRawBufferPointer?
        defer { buffer?.deallocate() }
        while true {
            let (available, cancelled, next) = control.withLock { ($0.available, $0.cancelled, $0.staged.first) }
            if !cancelled && hashed < available {
                if let next, next.offset == hashed {
                    consume(next.contents)
                    control.withLock { _ = $0.staged.removeFirst() }
                    next.pool?.give(next)
                    continue
                }
                let end = next.map { min(available, $0.offset) } ?? available
                let into = buffer ?? .allocate(byteCount: Int(min(1 << 20, max(64 << 10, end - hashed))), alignment: 64)
                buffer = into
                let n = pread(fd, into.baseAddress, Int(min(Int64(into.count), end - hashed)), off_t(hashed))
                if n > 0 {
                    consume(UnsafeRawBufferPointer(rebasing: into[0..<n]))
                    continue
                }
                if n < 0 && errno == EINTR { continue }
                // The file ended early or cannot be read: no digest.
                control.withLock { $0.cancelled = true }
            }
            var dropped: [StagedChunk] = []
            let step: (done: (([DigestAlgorithm: String]?) -> Void)?, digests: [DigestAlgorithm: String]?, idle: Bool) = control.withLock { c in
                if c.cancelled {
                    // Not hashed, but given back: a download still running (its file could not be
                    // read back) must not wait for them.
                    swap(&dropped, &c.staged)
                    if let done = c.done {
                        c.done = nil
                        return (done, nil, true)
                    }
                }
                if !c.cancelled && c.available > hashed { return (nil, nil, false) }
                if let size = c.finalSize, hashed >= size, let done = c.done {
                    c.done = nil
                    c.scheduled = false
                    return (done, digests.finalize(), true)
                }
                c.scheduled = false
                return (nil, nil, true)
            }
            // Outside the lock: giving a chunk back may wake its transfer.
            for chunk in dropped { chunk.pool?.give(chunk) }
            if !step.idle { continue }
            step.done?(step.digests)
            return
        }
    }

    /// Hashes the next bytes of the file, and checkpoints every `checkpointStep`.
    private func consume(_ piece: UnsafeRawBufferPointer) {
        digests.update(piece)
        hashed += Int64(piece.count)
        guard let checkpointed, hashed - lastCheckpoint >= Self.checkpointStep else { return }
        lastCheckpoint = hashed
        let tail = UnsafeRawBufferPointer(rebasing: piece[max(0, piece.count - DigestCheckpoint.tailSpan)...])
        let checkpoint = DigestCheckpoint(offset: hashed, states: digests.checkpoint(),
                                          tail: CRC32C.update(0, tail), tailLength: tail.count)
        // Under the lock and never once cancelled: a hasher replaced because its file started
        // over reports nothing after `cancel` returned, so nothing of the old content lands after
        // what its replacement reports.
        control.withLock { c in if !c.cancelled { checkpointed(checkpoint) } }
    }
}
