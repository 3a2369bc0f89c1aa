/// Bytes per second as a token bucket: refilled continuously, holding at most a fifth of a second
/// of tokens (a pause is made up for only briefly), and allowed to go into debt by one piece (curl
/// hands a callback a whole buffer, which is taken or paused, never split). Over seconds the
/// average holds to the rate within a piece, and the pacer keeps pieces to a twentieth of a second.
struct TokenBucket {
    private(set) var rate: Double
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

    /// A new rate from `now` on: what refilled until then at the old rate is kept, within the new
    /// capacity, and so is a debt (it is paid back at the new rate).
    mutating func setRate(_ bytesPerSecond: Int64, now: UInt64) {
        _ = available(now: now)
        rate = Double(bytesPerSecond)
        tokens = min(tokens, capacity)
    }

    /// The piece size that keeps a transfer under this rate smooth: a twentieth of a second.
    var pieceSize: Int { Int(min(max(rate / 20, 1024), Double(1 << 20))) }
}
