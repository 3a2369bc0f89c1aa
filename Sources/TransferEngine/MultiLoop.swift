import Digests
import CCurl
import CLinux
import Glibc
import Reactor
import Synchronization
import TransferVocabulary

/// One libcurl multi handle driven by one epoll thread (curl's event-driven "multi_socket" API): curl tells us
/// which sockets to watch (`CURLMOPT_SOCKETFUNCTION`) and when to wake (`CURLMOPT_TIMERFUNCTION`);
/// we call `curl_multi_socket_action` with the event that fired. Every curl call for this multi
/// and its easy handles happens on this loop's thread.
final class MultiLoop: @unchecked Sendable {
    let loop: EventLoop
    let policy: NetworkPolicy
    let shared: EngineShared
    let multi: OpaquePointer
    private let events: CurlSocketEvents
    private var pool = EasyHandlePool()
    var sessions: [String: SessionQueue] = [:]
    var admission = LoopAdmission()
    let pacer: Pacer
    var shares: [String: OpaquePointer] = [:]
    var errorBuffers: [ObjectIdentifier: UnsafeMutablePointer<CChar>] = [:]
    private(set) var runningCount = 0
    /// Admitted transfers whose files are being opened (`prepareFiles`): not running yet, but
    /// about to, so they count for the buffer size.
    private(set) var preparingCount = 0
    /// The urgent waiting count last added to `shared`.
    var publishedUrgentWaiting = 0
    private var retiredShares: [OpaquePointer] = []
    /// Read from other threads (statistics, wake-ups); written here.
    let counters = LoopCounters()
    /// Outcomes waiting for a hasher to let go of their file before they reach the observer.
    private let undelivered = Atomic<Int>(0)
    /// The connection cache's size as last set (`sizeConnectionCache`).
    var connectionCacheSize = 0

    init(index: Int, policy: NetworkPolicy, shared: EngineShared) {
        loop = EventLoop(name: "curl-\(index)")
        self.policy = policy
        self.shared = shared
        pacer = Pacer(loop: loop, global: shared.bandwidth, resolver: shared.bandwidthGroups)
        multi = OpaquePointer(curl_multi_init()!)
        events = CurlSocketEvents(multi: multi, loop: loop)
        events.start { [unowned self] context, result in
            handleDone(Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue(), code: result, detail: "")
        }
        scheduleIdleSweep()
        loop.start()
    }

    /// An engine shut down and let go leaked its multi, pooled easy handles and shares (found by
    /// LeakSanitizer). Nothing of this loop calls curl any more once this object goes; the
    /// callbacks are unset first so the cleanup's goodbyes to its sockets do not come back here.
    deinit {
        events.detach()
        curl_multi_cleanup(UnsafeMutableRawPointer(multi))
        pool.removeAll()
        for share in Array(shares.values) + retiredShares { curl_share_cleanup(UnsafeMutableRawPointer(share)) }
        for buffer in errorBuffers.values { buffer.deallocate() }
    }

    // MARK: sessions (loop thread; admission is in MultiLoop+Admission.swift)

    /// Forgets a session's queue and cookie jar once nothing of it runs.
    func removeSession(_ session: String) {
        guard let q = sessions[session], q.isIdle else { return }
        sessions[session] = nil
        if let share = shares.removeValue(forKey: session) { curl_share_cleanup(UnsafeMutableRawPointer(share)) }
    }

    // MARK: running transfers (loop thread)

    /// Admits a transfer: its files are opened and its curl handle and buffers taken only now, so
    /// a waiting transfer holds none of them. The files are opened off the loop (`preparations`):
    /// creating a file can take long (a directory on a slow or busy file system; on ext4 after
    /// mass deletions, half a millisecond of inode search), and every other transfer of the loop
    /// would wait meanwhile. The transfer holds its slot while it is prepared.
    func start(_ transfer: Transfer) {
        if let failure = transfer.session.settings.tls.unavailable {
            // The session's TLS files could not be read: no transfer runs without them.
            tell(transfer, .refused(failure))
        } else if transfer.fencePassed {
            // Cluster mode: past the lease's deadline not even the output is opened — continuing
            // it truncates or names a file another replica may hold by now.
            tell(transfer, .fenced)
        } else {
            tell(transfer, .admitted(preparing: transfer.spec.preparer != nil))
        }
    }

    func prepareFiles(_ transfer: Transfer) {
        guard let preparer = transfer.spec.preparer else { return }
        // Counted as undelivered until it is back: a shutdown waits for its outcome too.
        undelivered.add(1, ordering: .relaxed)
        preparingCount += 1
        shared.preparations.async { [self] in
            let files = Result { () throws(TransferFailure) in try preparer.prepare() }
            loop.execute { [self] in
                preparingCount -= 1
                prepared(transfer, files)
                undelivered.subtract(1, ordering: .releasing)
            }
        }
    }

    /// A transfer's files are open (or could not be): it starts, unless it was stopped meanwhile.
    private func prepared(_ transfer: Transfer, _ files: Result<TransferFiles, TransferFailure>) {
        switch files {
        case .failure(let failure):
            tell(transfer, .refused(failure))
        case .success(let files):
            // Held whether or not it starts: a stopped one's outcome hands them back (the
            // observer owns the output it opened).
            transfer.hold(files)
            tell(transfer, .prepared)
        }
        admitAll()
    }

    func launch(_ transfer: Transfer) {
        let q = transfer.session
        transfer.adopt()
        // Under `never` with an empty jar there is nothing to send and nothing may be kept, not
        // even along this transfer's redirects: the engine stays off.
        let cookies = q.settings.cookies
        transfer.usesCookieEngine = cookies.send && (cookies.accept != .never || !q.jar.cookies.isEmpty)
        let easy = pool.take(cookieEngine: transfer.usesCookieEngine)
        counters.idleHandles.store(pool.count, ordering: .relaxed)
        transfer.easy = easy
        runningCount += 1
        sizeConnectionCache()
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffers[ObjectIdentifier(transfer)] = errorBuffer
        guard attach(transfer, easy, errorBuffer: errorBuffer) else { return }
        transfer.observer.transferStarted(transfer.handle)
    }

    /// Configures the transfer's easy handle for its request and hands it to the multi handle;
    /// false when curl refused it (the transfer is finished then).
    func attach(_ transfer: Transfer, _ easy: OpaquePointer, errorBuffer: UnsafeMutablePointer<CChar>) -> Bool {
        let q = transfer.session
        errorBuffer[0] = 0
        var buffer = bufferSize
        pacer.refreshGroups(of: q)
        if pacer.paces(q) {
            transfer.pacer = pacer
            buffer = min(buffer, pacer.pieceSize(for: q))
        }
        EasyConfigurator.configure(easy, for: transfer, share: share(for: transfer.spec.session),
                                   errorBuffer: errorBuffer, bufferSize: buffer)
        if q.needsFreshConnection(to: transfer.spec.hostKey) {
            _ = transferd_easy_setopt_long(UnsafeMutableRawPointer(easy), CURLOPT_FRESH_CONNECT, 1)
        }
        transfer.handle.setPhase(.connecting)
        let rc = curl_multi_add_handle(UnsafeMutableRawPointer(multi), UnsafeMutableRawPointer(easy))
        guard rc == CURLM_OK else {
            handleDone(transfer, code: CURLE_FAILED_INIT, detail: "curl_multi_add_handle: \(rc.rawValue)")
            return false
        }
        return true
    }

    /// Ends an admitted transfer that cannot start or was stopped while its files were opened,
    /// before it takes a curl handle; its slot goes to the next one.
    func refuse(_ transfer: Transfer) {
        let q = transfer.session
        q.finished(transfer)
        shared.releaseSlot(from: self)
        deliver(transfer, outcome: transfer.outcome(curlCode: nil, errorDetail: ""))
        admission.offer(q)
    }

    /// Ends a transfer stopped while it waited for a slot (already out of the admission queue).
    func withdraw(_ transfer: Transfer) {
        publishStatistics()
        deliver(transfer, outcome: transfer.outcome(curlCode: nil, errorDetail: ""))
    }

    func stop(_ handle: TransferHandle, reason: StopReason) {
        if !loop.inLoop {
            loop.execute { [self] in stop(handle, reason: reason) }
            return
        }
        guard let q = sessions[handle.spec.session] else { return }
        // Waiting, being prepared or running; its lifecycle says what a stop does there.
        if let transfer = admission.removeWaiting(handle, from: q) ?? q.runningTransfer(handle) {
            tell(transfer, .stop(reason))
        }
    }

    /// Forgets a session's DNS/TLS caches: the next transfer gets a fresh share handle.
    /// Transfers running now keep the old one until they end.
    func retireShare(of session: String) {
        if let share = shares.removeValue(forKey: session) { retiredShares.append(share) }
        releaseRetiredShares()
    }

    private func releaseRetiredShares() {
        guard runningCount == 0 else { return }
        for share in retiredShares { curl_share_cleanup(UnsafeMutableRawPointer(share)) }
        retiredShares.removeAll()
    }

    /// Transfers waiting for admission and running, for other threads.
    var statisticsSnapshot: (waiting: Int, running: Int) {
        (counters.waiting.load(ordering: .relaxed), counters.running.load(ordering: .relaxed))
    }
    var bytesReceivedTotal: Int64 { counters.received.load(ordering: .relaxed) }
    var bytesSentTotal: Int64 { counters.sent.load(ordering: .relaxed) }
    var idleHandles: Int { counters.idleHandles.load(ordering: .relaxed) }

    /// Stops everything (shutdown): each observer gets its outcome with reason `.shutdown`.
    func stopAll() {
        for q in sessions.values {
            for handle in q.allHandles { stop(handle, reason: .shutdown) }
        }
    }

    /// `stopAll` from another thread, returning once every outcome reached its observer (or after
    /// `limit` seconds): a stopped download's outcome waits for its hasher on a pool thread and
    /// then comes back through this loop, which must still be running then — otherwise what the
    /// transfer wrote would never be recorded (its task continues after a restart from there).
    func stopAllAndWait(limit: Double = 10) {
        let stopped = ThreadSignal()
        loop.execute { [self] in
            stopAll()
            stopped.post()
        }
        stopped.wait()
        let deadline = MonotonicClock.after(seconds: limit)
        while undelivered.load(ordering: .acquiring) > 0 && MonotonicClock.now() < deadline { usleep(1000) }
    }

    /// After the loop's thread ended (`TransferEngine.shutdown`): forgets the sessions. Their
    /// cookie storage is the core, which holds the engine, which holds this loop: kept, an engine
    /// shut down stayed alive with its core and every session's queue (LeakSanitizer found).
    func forgetSessions() {
        sessions = [:]
        admission = LoopAdmission()
    }

    /// The attempt's handle goes back: the outcome is taken from it first, then its slot is freed
    /// and the outcome delivered.
    func finish(_ transfer: Transfer, code: CURLcode, detail: String) {
        guard let easy = transfer.easy else { return }
        let errorBuffer = errorBuffers.removeValue(forKey: ObjectIdentifier(transfer))
        let message = errorBuffer.map { String(cString: $0) } ?? ""
        errorBuffer?.deallocate()
        let outcome = transfer.outcome(curlCode: code, errorDetail: message.isEmpty ? detail : message)
        if code == CURLE_OK { dropConnectionWithLeftovers(easy, of: transfer) }
        curl_multi_remove_handle(UnsafeMutableRawPointer(multi), UnsafeMutableRawPointer(easy))
        if let list = transfer.headerList { curl_slist_free_all(list) }
        transfer.headerList = nil
        transfer.easy = nil
        runningCount -= 1
        sizeConnectionCache()
        pool.give(easy, cookieEngine: transfer.usesCookieEngine)
        counters.idleHandles.store(pool.count, ordering: .relaxed)
        releaseRetiredShares()
        let q = transfer.session
        q.finished(transfer)
        shared.releaseSlot(from: self)
        // The jar is written before the outcome goes out, so a task's cookies are stored no later
        // than its completion (both go through the same writer, in this order).
        saveCookiesIfChanged(q)
        deliver(transfer, outcome: outcome)
        admission.offer(q)
        admitAll()
    }

    /// Hands the outcome to the observer once the hasher, if any, has caught up (a successful file
    /// gets its digest) or let go of the file: at once on this loop without a hasher or when what
    /// was left to hash was little (`FileHasher.finish`), else on the hasher's pool thread.
    /// Observers hand completions on to their own executor, so a turn of this loop in between
    /// would only forward it.
    private func deliver(_ transfer: Transfer, outcome: TransferOutcome) {
        if case .segments(let segments) = transfer.files.body {
            for case .file(let fd, _, _) in segments { close(fd) }
        }
        undelivered.add(1, ordering: .relaxed)
        let complete: @Sendable ([DigestAlgorithm: String]?) -> Void = { [self, outcome] digests in
            var final = outcome
            final.digests = digests
            transfer.handle.setPhase(.finished)
            transfer.observer.transferCompleted(transfer.handle, final)
            undelivered.subtract(1, ordering: .releasing)
        }
        guard let hasher = transfer.hasher else { return complete(nil) }
        if outcome.failure == nil && outcome.stopReason == nil {
            hasher.finish(size: outcome.bytesReceived, done: complete)
        } else {
            hasher.cancel(done: complete)
        }
    }
}

/// Counters a loop keeps for statistics and wake-ups, readable from any thread.
final class LoopCounters: Sendable {
    let received = Atomic<Int64>(0)
    let sent = Atomic<Int64>(0)
    let waiting = Atomic<Int>(0)
    let running = Atomic<Int>(0)
    /// Easy handles in the loop's pool, kept for the next transfer.
    let idleHandles = Atomic<Int>(0)
    /// Work waits here for a running slot another loop holds.
    let starved = Atomic<Bool>(false)
    /// Slots other loops handed over, not used yet.
    let granted = Atomic<Int>(0)
    /// A discretionary transfer waits here for urgent work elsewhere to be done.
    let discretionaryWaiting = Atomic<Bool>(false)
}
