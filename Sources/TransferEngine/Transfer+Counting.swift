import CCurl

/// Counting a transfer's body bytes in its tally. The tally is shared by the transfers of every
/// loop: an atomic add on it per curl callback would move its cache line between cores at each
/// one, so bytes go to it a quarter MiB at a time, and the rest as the attempt ends.
extension Transfer {
    static let tallyBatch = 256 << 10

    func tallyReceived(_ n: Int) {
        untallied.received += n
        if untallied.received >= Transfer.tallyBatch { flushTally() }
    }

    func tallySent(_ n: Int) {
        untallied.sent += n
        if untallied.sent >= Transfer.tallyBatch { flushTally() }
    }

    func flushTally() {
        tally?.add(received: untallied.received, sent: untallied.sent)
        untallied = (0, 0)
    }

    /// A body handed to curl whole (`CURLOPT_COPYPOSTFIELDS`) never passes the read callback that
    /// counts what is sent: what curl sent of it is counted once, as the attempt ends.
    func countWholeBodySent(_ easy: OpaquePointer) {
        let delta = CurlInfo.offset(easy, CURLINFO_SIZE_UPLOAD_T) - bodySent
        guard delta > 0 else { return }
        bodySent += delta
        handle.setSent(bodySent)
        counters.sent.add(delta, ordering: .relaxed)
        tallySent(Int(delta))
    }
}
