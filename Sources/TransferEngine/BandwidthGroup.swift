import Reactor
import Synchronization

/// A bandwidth limit shared by the transfers of several sessions, on every loop: a `TokenBucket`
/// under a lock, taken once per curl callback of a transfer it paces. The engine's
/// `--max-bytes-per-second` is one that every transfer belongs to; the others are named by a
/// `BandwidthGroupResolver` (a principal's `max_bytes_per_second`, say).
public final class BandwidthGroup: Sendable {
    public let name: String
    private let bucket: Locked<TokenBucket>
    /// Read by every read callback of an upload it paces, so kept out of the lock.
    private let piece: Atomic<Int>

    /// `bytesPerSecond` must be positive.
    public init(name: String, bytesPerSecond: Int64) {
        precondition(bytesPerSecond > 0, "bandwidth group \(name): a rate must be positive")
        self.name = name
        let bucket = TokenBucket(bytesPerSecond: bytesPerSecond, now: MonotonicClock.now())
        piece = Atomic(bucket.pieceSize)
        self.bucket = Locked(bucket)
    }

    public var bytesPerSecond: Int64 { bucket.withLock { Int64($0.rate) } }

    /// Changes the rate in place (a reloaded configuration): transfers already paced by it follow.
    /// Their curl buffers keep the size chosen when they started; the bucket's debt of one piece
    /// absorbs the difference.
    public func setRate(_ bytesPerSecond: Int64) {
        precondition(bytesPerSecond > 0, "bandwidth group \(name): a rate must be positive")
        let size = bucket.withLock { bucket in
            bucket.setRate(bytesPerSecond, now: MonotonicClock.now())
            return bucket.pieceSize
        }
        piece.store(size, ordering: .relaxed)
    }

    var pieceSize: Int { piece.load(ordering: .relaxed) }

    func available(now: UInt64) -> Bool { bucket.withLock { $0.available(now: now) } }

    func consume(_ n: Int) { bucket.withLock { $0.consume(n) } }
}

/// Which groups a session's transfers belong to. `generation` changes whenever an answer may have
/// changed (say, a reloaded auth file); the engine asks again then, and caches answers otherwise.
/// Asked on the session's loop when one of its transfers starts, never per curl callback.
public protocol BandwidthGroupResolver: Sendable {
    var generation: UInt64 { get }
    func groups(forSession identifier: String) -> [BandwidthGroup]
}
