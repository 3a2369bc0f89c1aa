import Reactor
import TransferVocabulary

/// One session on its loop: its settings, cookie jar, bandwidth bucket and groups, the transfers that wait
/// for a slot, and the counts that decide when one opens: at most `maxConcurrentTasks` running, at
/// most `maxConnectionsPerHost` to one scheme/host/port. Waiting transfers are kept per host, each
/// list ordered by priority (higher first) then submission order, so a full host never blocks the
/// queue for the others. Confined to the loop's thread.
final class SessionQueue {
    let identifier: String
    var settings = SessionSettings() {
        didSet {
            if settings.maxBytesPerSecond != oldValue.maxBytesPerSecond {
                bucket = settings.maxBytesPerSecond.map { TokenBucket(bytesPerSecond: $0, now: MonotonicClock.now()) }
            }
        }
    }
    /// The session's cookies (never shared with another session).
    var jar = CookieJar()
    /// Where the jar is written when it changes; nil for an ephemeral session.
    var cookieStorage: (any CookieStorage)?
    /// The session's bandwidth, shared by its transfers.
    var bucket: TokenBucket?
    /// The bandwidth groups its transfers belong to, as the engine's resolver answered at
    /// `groupsGeneration` (nil: not asked yet). Kept here so a curl callback reads a list, and a
    /// session in no group pays for an empty one (`Pacer.refreshGroups`).
    var groups: [BandwidthGroup] = []
    var groupsGeneration: UInt64?
    /// In the loop's admission rotation (`LoopAdmission`).
    var inRotation = false
    private(set) var running = 0
    private(set) var waitingCount = 0
    private var runningByHost: [String: Int] = [:]
    private var waitingByHost: [String: [Transfer]] = [:]
    private var runningTransfers: [ObjectIdentifier: Transfer] = [:]

    /// Flushes so far, and for each host the flush its last connection followed.
    private var flushEpoch = 0
    private var hostEpochs: [String: Int] = [:]

    init(identifier: String) {
        self.identifier = identifier
    }

    func flush() { flushEpoch += 1 }

    /// True once per host after a flush: that transfer must not reuse a kept-alive connection.
    func needsFreshConnection(to host: String) -> Bool {
        guard flushEpoch > 0, hostEpochs[host, default: 0] != flushEpoch else { return false }
        hostEpochs[host] = flushEpoch
        return true
    }

    /// Whether `next` would return a transfer now.
    var hasAdmissible: Bool {
        guard running < settings.maxConcurrentTasks else { return false }
        return waitingByHost.contains { host, _ in (runningByHost[host] ?? 0) < settings.maxConnectionsPerHost }
    }

    var isIdle: Bool { running == 0 && waitingByHost.isEmpty }

    var allHandles: [TransferHandle] {
        Array(runningTransfers.values.map(\.handle)) + waitingByHost.values.flatMap { $0.map(\.handle) }
    }

    func enqueue(_ transfer: Transfer) {
        // In place: a copy taken out of the dictionary would share its buffer with the entry still
        // there, and the insert would copy (and retain) the whole list — quadratic over a batch of
        // thousands queued behind one host.
        SessionQueue.insert(transfer, into: &waitingByHost[transfer.spec.hostKey, default: []])
        waitingCount += 1
    }

    /// Inserts at the first place whose entry should come after `transfer` (binary search).
    private static func insert(_ transfer: Transfer, into list: inout [Transfer]) {
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if precedes(list[mid], transfer) { lo = mid + 1 } else { hi = mid }
        }
        list.insert(transfer, at: lo)
    }

    /// The next transfer to start, if the limits allow one: the best head among hosts with room.
    func next() -> Transfer? {
        guard running < settings.maxConcurrentTasks else { return nil }
        var best: (host: String, transfer: Transfer)?
        for (host, list) in waitingByHost where (runningByHost[host] ?? 0) < settings.maxConnectionsPerHost {
            guard let head = list.first else { continue }
            if best == nil || SessionQueue.precedes(head, best!.transfer) { best = (host, head) }
        }
        guard let (host, transfer) = best else { return nil }
        waitingByHost[host]!.removeFirst()
        if waitingByHost[host]!.isEmpty { waitingByHost[host] = nil }
        waitingCount -= 1
        running += 1
        runningByHost[host, default: 0] += 1
        runningTransfers[ObjectIdentifier(transfer.handle)] = transfer
        return transfer
    }

    func finished(_ transfer: Transfer) {
        guard runningTransfers.removeValue(forKey: ObjectIdentifier(transfer.handle)) != nil else { return }
        let host = transfer.spec.hostKey
        running -= 1
        runningByHost[host, default: 1] -= 1
        if runningByHost[host] == 0 { runningByHost[host] = nil }
    }

    var runningList: [Transfer] { Array(runningTransfers.values) }

    func runningTransfer(_ handle: TransferHandle) -> Transfer? {
        runningTransfers[ObjectIdentifier(handle)]
    }

    func removeWaiting(_ handle: TransferHandle) -> Transfer? {
        let host = handle.spec.hostKey
        guard let i = waitingByHost[host]?.firstIndex(where: { $0.handle === handle }) else { return nil }
        let transfer = waitingByHost[host]!.remove(at: i)
        if waitingByHost[host]!.isEmpty { waitingByHost[host] = nil }
        waitingCount -= 1
        return transfer
    }

    /// Higher priority first; equal priorities in submission order.
    static func precedes(_ a: Transfer, _ b: Transfer) -> Bool {
        a.priority != b.priority ? a.priority > b.priority : a.spec.sequence < b.spec.sequence
    }
}
