import Synchronization

/// Body bytes received and sent by the transfers that share it (a principal's, say), for the
/// metrics. Transfers add to it in batches (`Transfer+Counting`), never per byte, and never
/// under a lock.
public final class ByteTally: Sendable {
    private let received = Atomic<Int64>(0)
    private let sent = Atomic<Int64>(0)

    public init() {}

    public var totals: (received: Int64, sent: Int64) {
        (received.load(ordering: .relaxed), sent.load(ordering: .relaxed))
    }

    func add(received: Int, sent: Int) {
        if received > 0 { self.received.add(Int64(received), ordering: .relaxed) }
        if sent > 0 { self.sent.add(Int64(sent), ordering: .relaxed) }
    }
}
