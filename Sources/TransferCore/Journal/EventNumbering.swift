/// A session's event numbering: seqs are handed out when a batch is queued for the store, and the
/// store answers batches in the order they were queued. A batch the store refused is given back,
/// so that its seqs are used again and the journal has no gap — but only once nothing numbered
/// after it can still be stored: while later batches are queued, the refused ones wait for those
/// to fail too (then all go back at once) or to be stored (then the gap is in the journal already
/// and the seqs stay spent). A pure value: the journal feeds it what the store answered.
struct EventNumbering: Sendable, Equatable {
    /// The seq the next event gets.
    var next: Int64
    /// The first seq of refused batches that wait for the batches numbered after them.
    private var refusedFrom: Int64?

    init(next: Int64 = 1) {
        self.next = next
    }

    /// Numbers one event.
    mutating func take() -> Int64 {
        defer { next += 1 }
        return next
    }

    /// The store committed the batch holding `seqs`.
    mutating func stored(_ seqs: ClosedRange<Int64>) {
        // A later batch stored after a refused one: what was refused is a gap now, for good.
        if let from = refusedFrom, from < seqs.lowerBound { refusedFrom = nil }
    }

    /// The store refused the batch holding `seqs`: nothing of it was stored.
    mutating func refused(_ seqs: ClosedRange<Int64>) {
        let from = min(refusedFrom ?? seqs.lowerBound, seqs.lowerBound)
        if next == seqs.upperBound + 1 {
            next = from
            refusedFrom = nil
        } else {
            refusedFrom = from
        }
    }
}
