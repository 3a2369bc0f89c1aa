import Reactor

/// Holds transfers to their session's `max_bytes_per_second` (a bucket confined to the loop), to
/// the engine's `--max-bytes-per-second` and to the bandwidth groups of their session (buckets
/// shared by all loops). A transfer that finds a bucket in debt is paused — its curl callback
/// returns `CURL_WRITEFUNC_PAUSE` / `CURL_READFUNC_PAUSE`, and curl keeps the piece to hand it over
/// again — and a timer of the loop resumes paused transfers in turn as the buckets refill.
/// Resuming happens from that timer, outside every curl callback: curl_easy_pause(3) may hand the
/// kept piece to the write callback before it returns.
///
/// `CURLOPT_MAX_RECV_SPEED_LARGE` cannot do this: it limits one transfer, not a session's share.
final class Pacer {
    private let loop: EventLoop
    let global: BandwidthGroup?
    /// Names the groups of a session; asked when one of its transfers starts (`refreshGroups`).
    private let resolver: (any BandwidthGroupResolver)?
    private var paused: [Transfer] = []
    private var ticking = false
    /// How often paused transfers are looked at: a small step against the buckets' fifth of a
    /// second of capacity, so a rate holds within a few percent.
    private static let tick = 0.02

    init(loop: EventLoop, global: BandwidthGroup?, resolver: (any BandwidthGroupResolver)?) {
        self.loop = loop
        self.global = global
        self.resolver = resolver
    }

    /// Whether a transfer of `session` is paced at all (the fast path skips the rest).
    func paces(_ session: SessionQueue) -> Bool { session.bucket != nil || global != nil || !session.groups.isEmpty }

    /// The largest piece a paced transfer of `session` should move at once.
    func pieceSize(for session: SessionQueue) -> Int {
        session.groups.reduce(min(session.bucket?.pieceSize ?? Int.max, global?.pieceSize ?? Int.max)) {
            min($0, $1.pieceSize)
        }
    }

    /// A transfer of `session` starts: its groups are asked for again if the resolver's answers may
    /// have changed since they were cached (the callbacks read only the cache). Its running
    /// transfers follow the new answer.
    func refreshGroups(of session: SessionQueue) {
        guard let resolver else { return }
        let generation = resolver.generation
        guard session.groupsGeneration != generation else { return }
        session.groupsGeneration = generation
        session.groups = resolver.groups(forSession: session.identifier)
        paceRunning(of: session)
    }

    /// A limit that appears while transfers of `session` run applies to them too. (One that goes
    /// away needs nothing: the pacer lets them go.)
    func paceRunning(of session: SessionQueue) {
        guard paces(session) else { return }
        for transfer in session.runningList { transfer.pacer = self }
    }

    /// In a curl callback: whether `transfer` may move bytes now. If not, it is paused until a
    /// tick finds room, and the callback must return curl's pause code.
    func mayMove(_ transfer: Transfer) -> Bool {
        if available(for: transfer.session, now: MonotonicClock.now()) { return true }
        transfer.note(.paused(.pacer))
        paused.append(transfer)
        startTicking()
        return false
    }

    func moved(_ bytes: Int, by transfer: Transfer) {
        let session = transfer.session
        session.bucket?.consume(bytes)
        global?.consume(bytes)
        for group in session.groups { group.consume(bytes) }
    }

    /// A paused transfer's handle ends or starts again: it is no longer resumed.
    func forget(_ transfer: Transfer) {
        paused.removeAll { $0 === transfer }
    }

    /// Every bucket must have room. One not asked loses nothing: it refills by the time elapsed
    /// when it is asked next.
    private func available(for session: SessionQueue, now: UInt64) -> Bool {
        guard session.bucket?.available(now: now) ?? true, global?.available(now: now) ?? true else { return false }
        return session.groups.allSatisfy { $0.available(now: now) }
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
        for transfer in waiting where transfer.lifecycle.isPaused(by: .pacer) {
            guard available(for: transfer.session, now: MonotonicClock.now()) else {
                paused.append(transfer)
                continue
            }
            transfer.handle.loop.tell(transfer, .unpaused(.pacer))
        }
        if !paused.isEmpty { startTicking() }
    }
}
