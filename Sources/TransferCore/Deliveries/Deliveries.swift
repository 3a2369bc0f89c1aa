import Logging
import TransferEngine
import TransferModel
import TransferStore
import TransferVocabulary

/// Delegate delivery: a `DelegateChannel` per session with an enabled delegate, each POST of an
/// event through the engine, and the bookkeeping of what was delivered and acknowledged.
struct Deliveries: Sendable {
    let engine: TransferEngine
    let journal: TaskJournal
    /// A session invalidated and now settled (its events delivered or acknowledged) goes.
    let retirement: SessionRetirement
    let metrics: ServiceMetrics
    let clock: any ServiceClock
    let logger: Logger
    /// Delays before each webhook attempt (see `TaskCoordinator.Limits`).
    let schedule: [Double]

    /// Starts, updates or stops a session's delivery channel to match its delegate. A session has
    /// one channel while it has an enabled delegate; a delegate set anew (another URL, secret or
    /// filter) is handed to it, and one enabled again gets a new channel.
    func updateDelegateChannel(_ session: SessionState) {
        let (start, stop): (DelegateChannel?, DelegateChannel?) = session.locked {
            let wanted = session.delegate.flatMap { $0.disabled ? nil : $0 }
            switch (session.channel, wanted) {
            case (let channel?, let wanted?):
                // Under the lock, so that the channel is handed delegates in the order they were set.
                channel.use(wanted)
                return (nil, nil)
            case (let channel?, nil):
                session.channel = nil
                return (nil, channel)
            case (nil, let wanted?):
                let channel = DelegateChannel(session: session, delegate: wanted, delivered: session.deliveredThrough,
                                              deliveries: self)
                session.channel = channel
                return (channel, nil)
            case (nil, nil):
                return (nil, nil)
            }
        }
        stop?.stop()
        start?.start()
    }

    /// The delegate received everything up to `seq` (or did not want it): that counts as
    /// acknowledged. Memory only: `saveDeliveries` stores it.
    func markDelivered(_ session: SessionState, through seq: Int64) {
        session.locked {
            session.deliveredThrough = max(session.deliveredThrough, seq)
            session.ackedThrough = max(session.ackedThrough, seq)
        }
    }

    /// Stores delivery bookkeeping — webhook attempts, for `GET …/deliveries`, and how far
    /// delivery got — in one commit, then removes the session if it was invalidated and is now
    /// settled.
    func saveDeliveries(_ session: SessionState, _ attempts: [DeliveryAttempt]) {
        let through = session.locked { session.deliveredThrough }
        journal.persist(session, [.recordAttempts(attempts), .setDelivered(session: session.identifier, through: through),
                          .setAcked(session: session.identifier, through: through)]) { [self] _ in retirement.removeIfSettled(session) }
    }

    /// `POST …/events/ack`.
    func acknowledge(_ session: SessionState, through seq: Int64, completion: @escaping @Sendable (Result<Void, Refusal>) -> Void) {
        let acked = session.locked {
            session.ackedThrough = max(session.ackedThrough, min(seq, session.nextEventSeq - 1))
            return session.ackedThrough
        }
        journal.persist(session, [.setAcked(session: session.identifier, through: acked)]) { [self] result in
            completion(result.map { _ in }.mapError(Refusal.storeFailure))
            retirement.removeIfSettled(session)
        }
    }

    /// Disables the session's delegate, visibly (`delegate.disabled`), unless it was set anew
    /// meanwhile.
    func disable(_ delegate: Delegate, of session: SessionState, because reason: String) {
        let row: StoredSession? = session.locked {
            guard session.delegate == delegate else { return nil }
            session.delegate?.disabled = true
            return session.storedRow
        }
        guard let row else { return }
        logger.warning("delegate disabled", metadata: ["session": .string(session.identifier), "reason": .string(reason)])
        journal.persist(session, [.upsertSession(row)]) { _ in }
        updateDelegateChannel(session)
    }

    /// POSTs one event to the delegate, signed, through the engine: no redirects (a 3xx is a
    /// failure), 15 s at most; what the receiver answers beyond its status is not read.
    func deliver(_ event: Event, to delegate: Delegate, session: SessionState,
                 completion: @escaping @Sendable (TransferOutcome) -> Void)
    {
        let body = event.jsonBytes
        var spec = TransferSpec(label: "\(session.identifier)/delegate", session: Deliveries.deliverySession(session.identifier),
                                url: delegate.url)
        spec.method = "POST"
        spec.headers = [("Content-Type", "application/json"), ("User-Agent", "transferd/\(TransferdVersion.current)")]
            + WebhookSigner.headers(id: event.id, timestamp: clock.now().milliseconds / 1000, body: body, key: delegate.key)
        if let trace = traceparent(of: event, in: session).flatMap(TraceParent.init) {
            spec.headers.append(("traceparent", trace.child()))
        }
        spec.body = .bytes(body)
        spec.output = .discard
        spec.followRedirects = false
        spec.idleTimeout = 15
        spec.totalTimeout = 15
        engine.submit(spec, observer: DeliveryObserver(completion: completion))
    }

    /// The trace of the task an event is about: from memory while the task is there, else from
    /// its stored record — looked up only in sessions that traced a task.
    private func traceparent(of event: Event, in session: SessionState) -> String? {
        guard let id = event.task else { return nil }
        let (traced, inMemory): (Bool, String??) = session.locked {
            (session.tracesTasks, session.tasks[id].map { $0.record.traceparent })
        }
        guard traced else { return nil }
        if let inMemory { return inMemory }
        return (try? journal.store(of: session).loadTask(session: session.identifier, id: id))?.flatMap(\.traceparent)
    }

    /// Deliveries of a session run as their own engine session, so they never wait behind its
    /// transfers. `:` cannot occur in a session identifier, so the name cannot collide.
    static func deliverySession(_ identifier: String) -> String { "delegate:" + identifier }

    /// Lets the deliveries of `session` open as many connections to the receiver as `delegate`
    /// may have events out: with the engine's default (six to a host) all but six of a
    /// `max_in_flight` of 16 would wait for a connection.
    func configureDeliveries(of session: SessionState, for delegate: Delegate) {
        var settings = SessionSettings()
        settings.maxConnectionsPerHost = max(settings.maxConnectionsPerHost, delegate.maxInFlight)
        engine.configure(session: Self.deliverySession(session.identifier), settings: settings, cookieStorage: nil, cookies: nil)
    }
}
