import Reactor
import TransferVocabulary

/// Admission on a loop: sessions' settings, new transfers, and which waiting transfer starts when
/// (`LoopAdmission` within the loop, `EngineShared` between loops).
extension MultiLoop {
    /// Sets a session's settings. `cookies`, when given, replaces its jar (a new session starts
    /// empty; a restored one from the store); `cookieStorage` is where the jar is written.
    func configure(session: String, settings: SessionSettings, cookieStorage: (any CookieStorage)?, cookies: [Cookie]?) {
        let q = queue(for: session)
        admission.reclassify(q, discretionary: settings.discretionary)
        q.settings = settings
        q.cookieStorage = cookieStorage
        if let cookies { q.jar = CookieJar(cookies: cookies) }
        pacer.paceRunning(of: q)
        admission.offer(q)
        admitAll()
    }

    func submit(_ handle: TransferHandle, observer: TransferObserver) {
        let q = queue(for: handle.spec.session)
        let transfer = Transfer(handle: handle, observer: observer, policy: policy, session: q, counters: counters)
        admission.enqueue(transfer, in: q)
        admitAll()
    }

    func queue(for session: String) -> SessionQueue {
        if let q = sessions[session] { return q }
        let q = SessionQueue(identifier: session)
        sessions[session] = q
        return q
    }

    /// Starts waiting transfers, sessions in turn (`LoopAdmission`), while the engine has a
    /// running slot for this loop: one another loop handed over, or a free one. A loop left with
    /// work but no slot says so (`starved`), and the next loop to free a slot hands it over; the
    /// flag is raised before looking again, so no free slot is missed.
    func admitAll() {
        defer {
            // Slots handed over that found nothing to start go on to whoever waits.
            while takeGrantedSlot() { shared.releaseSlot(from: self) }
            publishStatistics()
        }
        while admission.hasOffers {
            guard takeGrantedSlot() || shared.acquireSlot() else {
                counters.starved.store(true, ordering: .relaxed)
                if shared.hasFreeSlot { continue }
                return
            }
            counters.starved.store(false, ordering: .relaxed)
            let pending = admission.urgentWaiting - publishedUrgentWaiting
            guard let transfer = admission.next(discretionaryAllowed: { shared.urgentWaiting(pending: pending) == 0 }) else {
                shared.releaseSlot(from: self)
                return
            }
            start(transfer)
        }
    }

    /// Other loops only add to `granted`; this one alone takes from it.
    private func takeGrantedSlot() -> Bool {
        guard counters.granted.load(ordering: .relaxed) > 0 else { return false }
        counters.granted.wrappingSubtract(1, ordering: .relaxed)
        return true
    }

    /// Changes the admission priority of a transfer that has not started yet.
    func setPriority(_ handle: TransferHandle, _ priority: Double) {
        guard let q = sessions[handle.spec.session] else { return }
        if let transfer = admission.removeWaiting(handle, from: q) {
            transfer.priority = priority
            admission.enqueue(transfer, in: q)
            admitAll()
        }
    }

    /// Refreshes the counts other threads read, and this loop's share of the engine's urgent
    /// waiting count.
    func publishStatistics() {
        counters.waiting.store(admission.urgentWaiting + admission.discretionaryWaiting, ordering: .relaxed)
        counters.running.store(runningCount, ordering: .relaxed)
        counters.discretionaryWaiting.store(admission.discretionaryWaiting > 0, ordering: .relaxed)
        shared.publishUrgentWaiting(admission.urgentWaiting - publishedUrgentWaiting)
        publishedUrgentWaiting = admission.urgentWaiting
    }
}
