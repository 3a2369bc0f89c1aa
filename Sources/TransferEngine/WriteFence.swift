import Synchronization

/// Cluster mode: the moment until which this replica may still write to the files it shares with
/// the others — a download's partial file, its final name. The store's fencing refuses a replica
/// whose lease expired, but a file takes any `pwrite`: a replica frozen past its lease (`SIGSTOP`,
/// a paused VM) would, once thawed, write what waited in its sockets into a file another replica
/// took over, before it ever learnt that its lease was gone. So every write is checked here first,
/// against the deadline the last successful renewal allows (`LeaseKeeper.actsUntil`, set by the
/// cluster membership): a renewal sent at `t` keeps the store's lease until at least `t + ttl`,
/// and this deadline ends a margin before that, so by the time another replica may claim a
/// session, this one has stopped writing its files. One clock read per write.
///
/// Times are `LeaseClock` seconds, so a suspended machine wakes up past its deadline.
public final class WriteFence: Sendable {
    /// Writes are allowed before this moment (nanoseconds of `LeaseClock`); 0 until a lease is proved.
    private let until = Atomic<UInt64>(0)

    /// Closed: nothing may be written until the first renewal.
    public init() {}

    /// A renewal proved the leases until `deadline` (`LeaseClock` seconds).
    public func allow(until deadline: Double) {
        until.store(deadline <= 0 ? 0 : UInt64(deadline * 1e9), ordering: .releasing)
    }

    /// Whether a write at `now` (`LeaseClock` nanoseconds) may go ahead.
    public func permits(at now: UInt64) -> Bool { now < until.load(ordering: .acquiring) }

    public var permitsNow: Bool { permits(at: LeaseClock.nanoseconds()) }
}
