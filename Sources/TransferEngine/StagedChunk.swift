import Reactor

/// A piece of a download held in memory: filled by the loop, written to the file from here with
/// O_DIRECT (`DirectOutput`), then hashed from here by the file's `FileHasher` — the bytes are
/// never read back from the file, which O_DIRECT leaves out of the page cache.
final class StagedChunk: @unchecked Sendable {
    let bytes: UnsafeMutableRawPointer
    let capacity: Int
    /// Where the first byte goes in the file.
    var offset: Int64 = 0
    var count = 0
    /// Where the chunk goes back once hashed; gone with its transfer, the chunk is just freed.
    weak var pool: ChunkPool?

    init(capacity: Int, pool: ChunkPool) {
        bytes = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: DirectOutput.alignment)
        self.capacity = capacity
        self.pool = pool
    }

    deinit { bytes.deallocate() }

    var remaining: Int { capacity - count }
    var contents: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: bytes, count: count) }
    var end: Int64 { offset + Int64(count) }
}

/// The chunks of one direct output, shared by the loop (which takes them) and the hasher's pool
/// thread (which gives them back). At most `limit` exist, so a hasher that falls behind holds the
/// download back (its transfer pauses) instead of growing memory.
final class ChunkPool: @unchecked Sendable {
    private struct State {
        var free: [StagedChunk] = []
        var allocated = 0
        /// Runs once when a chunk comes back after `take` found none.
        var waiter: (@Sendable () -> Void)?
        var closed = false
    }

    let chunkSize: Int
    let limit: Int
    private let state = Locked(State())

    init(chunkSize: Int, limit: Int) {
        self.chunkSize = chunkSize
        self.limit = limit
    }

    /// A free chunk, else a new one while fewer than `limit` exist (always, when `beyondLimit`);
    /// nil when every chunk is away, and `waiter` runs when the next one comes back.
    func take(beyondLimit: Bool = false, orWait waiter: @escaping @Sendable () -> Void) -> StagedChunk? {
        let found: (chunk: StagedChunk?, allocate: Bool) = state.withLock { s in
            if let chunk = s.free.popLast() { return (chunk, false) }
            guard s.allocated < limit || beyondLimit else {
                s.waiter = waiter
                return (nil, false)
            }
            s.allocated += 1
            return (nil, true)
        }
        if found.allocate { return StagedChunk(capacity: chunkSize, pool: self) }
        return found.chunk
    }

    /// A chunk is written (and hashed, when there is a hasher): it can be filled again.
    func give(_ chunk: StagedChunk) {
        chunk.count = 0
        let waiter: (@Sendable () -> Void)? = state.withLock { s in
            if !s.closed { s.free.append(chunk) }
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?()
    }

    /// The transfer ended: nobody waits any more, and free chunks are released now rather than
    /// with the last chunk still at the hasher.
    func close() {
        state.withLock { s in
            s.waiter = nil
            s.free.removeAll()
            s.closed = true
        }
    }
}
