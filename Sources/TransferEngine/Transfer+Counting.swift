import CCurl

extension Transfer {
    /// A body handed to curl whole (`CURLOPT_COPYPOSTFIELDS`) never passes the read callback that
    /// counts what is sent: what curl sent of it is counted once, as the attempt ends.
    func countWholeBodySent(_ easy: OpaquePointer) {
        let delta = CurlInfo.offset(easy, CURLINFO_SIZE_UPLOAD_T) - bodySent
        guard delta > 0 else { return }
        bodySent += delta
        handle.setSent(bodySent)
        counters.sent.add(delta, ordering: .relaxed)
        tally?.addSent(Int(delta))
    }
}
