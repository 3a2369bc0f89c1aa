import CCurl
import Reactor

/// Holds transfers to their session's `max_bytes_per_second` and to the engine's
/// `--max-bytes-per-second` (one per loop, confined to it). A transfer that finds a bucket in debt
/// is paused — its curl callback returns `CURL_WRITEFUNC_PAUSE` / `CURL_READFUNC_PAUSE`, and curl
/// keeps the piece to hand it over again — and a timer of the loop resumes paused transfers in
/// turn as the buckets refill. Resuming happens from that timer, outside every curl callback:
/// curl_easy_pause(3) may hand the kept piece to the write callback before it returns.
///
/// `CURLOPT_MAX_RECV_SPEED_LARGE` cannot do this: it limits one transfer, not a session's share.
final class Pacer {
    private let loop: EventLoop
    let global: SharedTokenBucket?
    private var paused: [Transfer] = []
    private var ticking = false
    /// How often paused transfers are looked at: a small step against the buckets' fifth of a
    /// second of capacity, so a rate holds within a few percent.
    private static let tick = 0.02

    init(loop: EventLoop, global: SharedTokenBucket?) {
        self.loop = loop
        self.global = global
    }

    /// Whether a transfer of `session` is paced at all (the fast path skips the rest).
    func paces(_ session: SessionQueue) -> Bool { session.bucket != nil || global != nil }

    /// The largest piece a paced transfer of `session` should move at once.
    func pieceSize(for session: SessionQueue) -> Int {
        min(session.bucket?.pieceSize ?? Int.max, global?.pieceSize ?? Int.max)
    }

    /// In a curl callback: whether `transfer` may move bytes now. If not, it is paused until a
    /// tick finds room, and the callback must return curl's pause code.
    func mayMove(_ transfer: Transfer) -> Bool {
        if available(for: transfer.session, now: MonotonicClock.now()) { return true }
        transfer.isPaused = true
        paused.append(transfer)
        startTicking()
        return false
    }

    func moved(_ bytes: Int, by transfer: Transfer) {
        transfer.session.bucket?.consume(bytes)
        global?.consume(bytes)
    }

    /// A transfer ends: it is no longer resumed.
    func forget(_ transfer: Transfer) {
        guard transfer.isPaused else { return }
        transfer.isPaused = false
        paused.removeAll { $0 === transfer }
    }

    private func available(for session: SessionQueue, now: UInt64) -> Bool {
        // Both are asked (each refills on the way), and both must have room.
        let own = session.bucket?.available(now: now) ?? true
        let all = global?.available(now: now) ?? true
        return own && all
    }

    private func startTicking() {
        guard !ticking else { return }
        ticking = true
        _ = loop.scheduleTimer(at: MonotonicClock.after(seconds: Pacer.tick)) { [weak self] in self?.resumeReady() }
    }

    /// Resumes paused transfers in the order they paused while their buckets have room; one that
    /// pauses again on the piece it is handed goes to the back.
    private func resumeReady() {
        ticking = false
        let waiting = paused
        paused = []
        for transfer in waiting where transfer.isPaused {
            guard let easy = transfer.easy else { continue }
            let now = MonotonicClock.now()
            guard available(for: transfer.session, now: now) else {
                paused.append(transfer)
                continue
            }
            transfer.isPaused = false
            transfer.lastActivity = now
            _ = transferd_easy_unpause(UnsafeMutableRawPointer(easy))
        }
        if !paused.isEmpty { startTicking() }
    }
}
