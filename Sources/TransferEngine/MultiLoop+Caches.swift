import CCurl

/// What a loop keeps for its transfers: connections in curl's cache, receive buffers, and each
/// session's share (DNS and TLS session caches).
extension MultiLoop {
    /// Connections kept however few transfers run.
    static let connectionCacheFloor = 64

    /// curl sizes its connection cache at four per transfer added unless told otherwise, so a loop
    /// down to a transfer or two closes all but a handful of the connections a burst opened, and
    /// the next burst to the same hosts connects again: webhooks to one receiver, up to 16 out at
    /// once but often only one or two, opened a connection every seven requests. The same rule
    /// with a floor keeps that many; idle ones still close after curl's `CURLOPT_MAXAGE_CONN`.
    func sizeConnectionCache() {
        let size = max(Self.connectionCacheFloor, 4 * runningCount)
        guard size != connectionCacheSize else { return }
        connectionCacheSize = size
        _ = transferd_multi_setopt_long(UnsafeMutableRawPointer(multi), CURLMOPT_MAXCONNECTS, size)
    }

    /// Large receive buffers make a lone download write in big pieces (page-cache writes of 1 MiB
    /// run about twice as fast as 16 KiB ones); with many transfers at once, memory matters more:
    /// curl allocates the buffer per handle, and 10,000 slow transfers must fit in 1 GiB.
    /// Transfers still opening their files count too: in a burst of small downloads most of the
    /// admitted ones wait for their files, and counting only the running ones gave half of the
    /// burst a 1 MiB buffer, mapped and unmapped (and its pages faulted in) for 16 KiB.
    var bufferSize: Int { runningCount + preparingCount <= 32 ? 1 << 20 : 16 * 1024 }

    /// The session's curl share, made on its first transfer.
    func share(for session: String) -> OpaquePointer {
        if let s = shares[session] { return s }
        let s = OpaquePointer(curl_share_init()!)
        // One DNS cache and TLS session cache per session; all its transfers run on this thread,
        // so the share needs no lock callbacks. Cookies are the session's jar (`SessionQueue`).
        for data in [CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_SSL_SESSION] {
            _ = transferd_share_setopt_long(UnsafeMutableRawPointer(s), CURLSHOPT_SHARE, Int(data.rawValue))
        }
        shares[session] = s
        return s
    }
}
