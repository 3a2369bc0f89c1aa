import Dispatch
import Reactor
import Synchronization

/// What the loops of one engine share: the cap on transfers running at once, the count of
/// non-discretionary transfers waiting (discretionary ones start only at zero), the global
/// bandwidth group and what names the others. Atomics, read and written from every loop; a loop that is held back by the
/// others (no free slot, or urgent work elsewhere) raises a flag, and the loop that frees the way
/// wakes it.
///
/// Slots are fair between loops: a loop that frees a slot while another loop waits for one hands
/// the slot over (`granted`) instead of taking it again itself, the waiting loops served in turn.
/// Within a loop, sessions take turns (`LoopAdmission`).
final class EngineShared: Sendable {
    let maxRunning: Int
    /// `--max-bytes-per-second`: every transfer belongs to it.
    let bandwidth: BandwidthGroup?
    let bandwidthGroups: (any BandwidthGroupResolver)?
    /// `--direct-writes`: large downloads may be written with O_DIRECT.
    let directWrites: Bool
    /// Cluster mode: checked before every write to an output file (nil: one node, nothing fences).
    let fence: WriteFence?
    private let running = Atomic<Int>(0)
    private let urgentWaiting = Atomic<Int>(0)
    private let loops = Locked<[MultiLoop]>([])
    /// Where the search for a waiting loop starts next, so waiting loops are served in turn.
    private let handoffCursor = Atomic<Int>(0)
    /// Where admitted transfers' files are opened, off the loops (`MultiLoop.start`). Below the
    /// default priority of Dispatch's pool: finishing a transfer (its file made durable, its task
    /// completed, its webhook sent) goes before opening the next one's file, or a burst of
    /// completions waits behind a burst of admissions on the pool's few threads.
    let preparations = DispatchQueue(label: "transferd.prepare", qos: .utility, attributes: .concurrent)

    init(maxRunning: Int, maxBytesPerSecond: Int64?, bandwidthGroups: (any BandwidthGroupResolver)? = nil, directWrites: Bool = true,
         fence: WriteFence? = nil) {
        self.maxRunning = maxRunning
        self.directWrites = directWrites
        self.fence = fence
        bandwidth = maxBytesPerSecond.map { BandwidthGroup(name: "global", bytesPerSecond: $0) }
        self.bandwidthGroups = bandwidthGroups
    }

    /// Called once, by the engine, before any work is submitted.
    func attach(_ all: [MultiLoop]) { loops.withLock { $0 = all } }

    /// Called once, by the engine, after its loops stopped: the loops refer to this object, so
    /// keeping them here kept an engine that was shut down alive for good (LeakSanitizer found).
    func detach() { loops.withLock { $0 = [] } }

    /// Takes a running slot if one is free.
    func acquireSlot() -> Bool {
        var current = running.load(ordering: .relaxed)
        while current < maxRunning {
            let (exchanged, original) = running.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives back a slot `releaser` held: to another loop that waits for one, if any (the slot
    /// stays taken, now on that loop's account), else to the pool.
    func releaseSlot(from releaser: MultiLoop) {
        let all = loops.withLock { $0 }
        let start = handoffCursor.wrappingAdd(1, ordering: .relaxed).oldValue
        for i in 0..<all.count {
            let loop = all[(start + i) % all.count]
            guard loop !== releaser, loop.counters.starved.exchange(false, ordering: .relaxed) else { continue }
            loop.counters.granted.wrappingAdd(1, ordering: .relaxed)
            loop.loop.execute { loop.admitAll() }
            return
        }
        running.wrappingSubtract(1, ordering: .relaxed)
    }

    var hasFreeSlot: Bool { running.load(ordering: .relaxed) < maxRunning }

    /// Non-discretionary transfers waiting on all loops, with `pending` of the caller's not yet
    /// published.
    func urgentWaiting(pending: Int) -> Int { urgentWaiting.load(ordering: .relaxed) + pending }

    /// Publishes a loop's change in waiting urgent transfers; when none waits anywhere any more,
    /// loops with discretionary work are woken.
    func publishUrgentWaiting(_ delta: Int) {
        guard delta != 0 else { return }
        let (_, now) = urgentWaiting.wrappingAdd(delta, ordering: .relaxed)
        if now == 0 && delta < 0 { wake { $0.counters.discretionaryWaiting.load(ordering: .relaxed) } }
    }

    private func wake(_ which: (MultiLoop) -> Bool) {
        // Copied out of the lock: `execute` may run the work at once on this thread.
        for loop in loops.withLock({ $0 }) where which(loop) {
            loop.loop.execute { loop.admitAll() }
        }
    }
}
