/// One TCP connection as curl names it before each request (CURLOPT_PREREQFUNCTION) and as its
/// socket says (getpeername(2), getsockname(2)): the same connection has the same ends.
struct ConnectionEnds: Equatable, Sendable {
    var remoteIP: String
    var remotePort: Int32
    var localPort: Int32
}

/// Whether the bytes waiting on a finished transfer's kept HTTP/1.x connection are leftovers of
/// its response, to be dropped by shutting the connection (`MultiLoop.dropConnectionWithLeftovers`).
///
/// curl may have handed the connection to the next transfer within the step that finished this
/// one, and that transfer may even have read its response head in the same step: the bytes
/// waiting are then the rest of its body, and shutting the connection cut it short (it ran again,
/// continuing with `Range`). So the bytes are another transfer's when they begin like a status
/// line (its head, not read yet), or when a transfer that sent its request on this connection
/// has had an answer since. Leftovers are what is left: they would be read as the answer of
/// whichever request goes out on the connection next — or has just gone out and is not answered.
enum Leftovers {
    /// `waiting`: the first bytes waiting (peeked); `holder`: what the transfer whose last request
    /// went out on this connection has seen, if another one did.
    static func mustShutConnection(waiting: some Collection<UInt8>, holder: RequestSends?) -> Bool {
        guard !waiting.isEmpty, !waiting.elementsEqual(statusLineStart.prefix(waiting.count)) else { return false }
        return !(holder?.answered ?? false)
    }

    private static let statusLineStart = Array("HTTP/".utf8)
}
