/// The requests one attempt puts on the wire, as libcurl announces each just before sending it
/// (CURLOPT_PREREQFUNCTION: "called when a connection has been established or reused, right
/// before the request is sent"), and whether libcurl may send the same request again.
///
/// libcurl 7.88 sends a request a second time by itself when it went out on a reused connection
/// and not one response byte came back (`Curl_retry_request` in lib/transfer.c: "Connection died,
/// retrying a fresh connect"), whatever the method, up to 5 times; it has no option to stop that.
/// The origin may have read the request and acted on it before the connection closed, so a re-send
/// is a retry the origin can see. It is told apart from the other requests of an attempt — a
/// redirect followed, an authentication round, both of which come after a response — by
/// coming with no response byte since the request before it. Refusing it in the callback ends the
/// attempt (CURLE_ABORTED_BY_CALLBACK) before anything is sent again, with or without a body.
/// (An HTTP/2 REFUSED_STREAM retry looks the same and is refused too: that request was never
/// processed, but nothing here can tell, and failing it once is the safe side.)
///
/// Nothing here touches curl: `Transfer` reports to it from curl's callbacks.
struct RequestSends: Equatable {
    /// How many re-sends are allowed (each is an attempt the caller counts).
    let limit: Int
    /// Requests begun: 0 means the attempt failed before a request went out (the name was not
    /// resolved, no connection was made, the TLS handshake failed), so the origin saw nothing.
    private(set) var begun = 0
    /// Re-sends allowed so far.
    private(set) var resends = 0
    /// A re-send was refused: the attempt ended there.
    private(set) var refusedResend = false
    /// A response byte arrived since the last request began.
    private(set) var answered = true
    /// The connection the last request went out on, as curl named it before sending.
    private(set) var connection: ConnectionEnds?

    init(limit: Int) {
        self.limit = limit
    }

    /// curl is about to send a request on `connection`: whether it may.
    mutating func requestBeginning(on connection: ConnectionEnds? = nil) -> Bool {
        if begun > 0 && !answered {
            guard resends < limit else {
                refusedResend = true
                return false
            }
            resends += 1
        }
        begun += 1
        answered = false
        self.connection = connection
        return true
    }

    /// A byte of a response head arrived (a 1xx included: curl re-sends only after none).
    mutating func responseArrived() {
        answered = true
    }

    /// The origin may have seen the request.
    var requestMayHaveReachedOrigin: Bool { begun > 0 }
}
