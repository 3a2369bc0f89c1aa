import Synchronization

/// Body bytes received and sent by the transfers that share it (a principal's, say), for the
/// metrics: two relaxed atomic adds per curl callback, never a lock.
public final class ByteTally: Sendable {
    private let received = Atomic<Int64>(0)
    private let sent = Atomic<Int64>(0)

    public init() {}

    public var totals: (received: Int64, sent: Int64) {
        (received.load(ordering: .relaxed), sent.load(ordering: .relaxed))
    }

    func addReceived(_ n: Int) { received.add(Int64(n), ordering: .relaxed) }
    func addSent(_ n: Int) { sent.add(Int64(n), ordering: .relaxed) }
}
