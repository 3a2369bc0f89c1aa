import Reactor
import Synchronization

/// Bytes per second as a token bucket: refilled continuously, holding at most a fifth of a second
/// of tokens (a pause is made up for only briefly), and allowed to go into debt by one piece (curl
/// hands a callback a whole buffer, which is taken or paused, never split). Over seconds the
/// average holds to the rate within a piece, and the pacer keeps pieces to a twentieth of a second.
struct TokenBucket {
    let rate: Double
    private var tokens: Double = 0
    private var last: UInt64

    init(bytesPerSecond: Int64, now: UInt64) {
        rate = Double(bytesPerSecond)
        last = now
    }

    private var capacity: Double { max(rate / 5, 16 * 1024) }

    /// Whether bytes may move now (the bucket is not in debt). A `now` older than the last one
    /// (read before another caller's) adds nothing.
    mutating func available(now: UInt64) -> Bool {
        if now > last {
            tokens = min(capacity, tokens + rate * Double(now - last) / 1e9)
            last = now
        }
        return tokens > 0
    }

    mutating func consume(_ n: Int) {
        tokens -= Double(n)
    }

    /// The piece size that keeps a transfer under this rate smooth: a twentieth of a second.
    var pieceSize: Int { Int(min(max(rate / 20, 1024), Double(1 << 20))) }
}

/// A bucket shared by all loops (the global `--max-bytes-per-second`): the same arithmetic under a
/// lock, taken once per curl callback of a paced transfer.
final class SharedTokenBucket: Sendable {
    private let bucket: Mutex<TokenBucket>
    let pieceSize: Int

    init(bytesPerSecond: Int64) {
        let bucket = TokenBucket(bytesPerSecond: bytesPerSecond, now: MonotonicClock.now())
        pieceSize = bucket.pieceSize
        self.bucket = Mutex(bucket)
    }

    func available(now: UInt64) -> Bool { bucket.withLock { $0.available(now: now) } }

    func consume(_ n: Int) { bucket.withLock { $0.consume(n) } }
}
