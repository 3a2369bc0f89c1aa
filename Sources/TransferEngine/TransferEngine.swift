import CCurl
import Glibc
import TransferVocabulary

/// Runs transfers on a small pool of curl multi loops. Each session is pinned to one loop by its
/// identifier, so its cookie jar, DNS and TLS caches and kept-alive connections stay on one thread.
/// The loops share a cap on transfers running at once and the bandwidth groups (`EngineShared`).
public final class TransferEngine: Sendable {
    private let loops: [MultiLoop]
    /// Cluster mode: what every write to an output file is checked against (nil: one node).
    public let fence: WriteFence?

    /// `curl_global_init` must run once, before any other thread uses curl.
    public static func globalInit() {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }

    /// `maxRunning`: transfers running at once across all loops (the rest wait, sessions taking
    /// turns); `maxBytesPerSecond`: body bytes per second across all transfers; `bandwidthGroups`:
    /// the groups each session's transfers share a rate with besides (its own limit and the global
    /// one apply as well); `directWrites`: large downloads are written with O_DIRECT
    /// (`DirectOutput`) where their file system takes it; `fence`: cluster mode's deadline for
    /// writes to files, past which a transfer stops with `StopReason.fenced`.
    public init(loopCount: Int, policy: NetworkPolicy, maxRunning: Int = 10_000, maxBytesPerSecond: Int64? = nil,
                bandwidthGroups: (any BandwidthGroupResolver)? = nil, directWrites: Bool = true, fence: WriteFence? = nil) {
        self.fence = fence
        let shared = EngineShared(maxRunning: max(1, maxRunning), maxBytesPerSecond: maxBytesPerSecond,
                                  bandwidthGroups: bandwidthGroups, directWrites: directWrites, fence: fence)
        loops = (0..<max(1, loopCount)).map { MultiLoop(index: $0, policy: policy, shared: shared) }
        shared.attach(loops)
    }

    /// Sets (or changes) a session's settings. `cookies`, when given, replaces its cookie jar (a
    /// new session starts from `[]`, a restored one from what was stored); nil keeps the jar.
    /// `cookieStorage` is where the jar is written when it changes (nil: memory only).
    public func configure(session: String, settings: SessionSettings, cookieStorage: (any CookieStorage)?, cookies: [Cookie]?) {
        let loop = loop(for: session)
        loop.loop.execute { loop.configure(session: session, settings: settings, cookieStorage: cookieStorage, cookies: cookies) }
    }

    /// The session's cookies, on the session's loop.
    public func cookies(of session: String, _ completion: @escaping @Sendable ([Cookie]) -> Void) {
        let loop = loop(for: session)
        loop.loop.execute { completion(loop.cookies(of: session)) }
    }

    /// Queues a transfer; it starts when its session's limits allow.
    /// The observer is told everything on the session's loop thread.
    @discardableResult
    public func submit(_ spec: TransferSpec, observer: TransferObserver) -> TransferHandle {
        let loop = loop(for: spec.session)
        let handle = TransferHandle(spec: spec, loop: loop)
        if loop.loop.inLoop {
            loop.submit(handle, observer: observer)
        } else {
            loop.loop.execute { loop.submit(handle, observer: observer) }
        }
        return handle
    }

    /// The resolver's answers changed (a reloaded auth file): every session asks again now, so a
    /// transfer already running is held to a group it has just joined, not only the next one.
    public func bandwidthGroupsChanged() {
        for loop in loops {
            loop.loop.execute { for q in loop.sessions.values { loop.pacer.refreshGroups(of: q) } }
        }
    }

    public func setPriority(_ handle: TransferHandle, _ priority: Double) {
        let loop = handle.loop
        loop.loop.execute { loop.setPriority(handle, priority) }
    }

    /// `POST …/flush`: writes the session's cookies out (`done` once stored) and makes its next
    /// requests use new connections.
    public func flushSession(_ session: String, done: @escaping @Sendable () -> Void) {
        let loop = loop(for: session)
        loop.loop.execute { loop.flushSession(session, done: done) }
    }

    /// `POST …/reset`: forgets the session's cookies, DNS and TLS caches and connections.
    public func resetSession(_ session: String, done: @escaping @Sendable () -> Void) {
        let loop = loop(for: session)
        loop.loop.execute { loop.resetSession(session, done: done) }
    }

    /// Transfers waiting and running across all loops (a snapshot, gathered from each loop).
    public func statistics() -> (waiting: Int, running: Int) {
        loops.reduce((0, 0)) { total, loop in
            let s = loop.statisticsSnapshot
            return (total.0 + s.waiting, total.1 + s.running)
        }
    }

    /// Body bytes received and sent by all transfers since start.
    public var totalBytes: (received: Int64, sent: Int64) {
        loops.reduce((0, 0)) { ($0.0 + $1.bytesReceivedTotal, $0.1 + $1.bytesSentTotal) }
    }

    /// curl easy handles: attached to a running transfer (`active`), or pooled for the next (`idle`).
    public var curlHandles: (active: Int, idle: Int) {
        loops.reduce((0, 0)) { ($0.0 + $1.statisticsSnapshot.running, $0.1 + $1.idleHandles) }
    }

    public func removeSession(_ session: String) {
        let loop = loop(for: session)
        loop.loop.execute { loop.removeSession(session) }
    }

    /// Stops every transfer (observers get `.shutdown` outcomes) and then the loops.
    public func shutdown() {
        for loop in loops { loop.stopAllAndWait() }
        for loop in loops { loop.loop.stopAndJoin() }
        for loop in loops { loop.forgetSessions() }
        loops.first?.shared.detach()
    }

    /// FNV-1a of the identifier: stable across restarts, so a session lands on the same loop.
    private func loop(for session: String) -> MultiLoop {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in session.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return loops[Int(hash % UInt64(loops.count))]
    }
}
