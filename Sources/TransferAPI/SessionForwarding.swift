import Dispatch
import HTTPServer
import ReplicaForwarding
import TransferModel

/// Requests to a session held by another replica go there, and its answer comes back: any
/// replica answers any call. Decided after the access gate (every replica reads the same
/// principals) and before anything that keeps state about the request (the idempotency ledger,
/// the handler), which is the holder's to keep.
package struct SessionForwarding: Sendable {
    let placement: any SessionPlacement
    let forwarder: ReplicaForwarder
    /// Where requests wait for the store to say where their session is, and are then served or
    /// forwarded: never on a server thread, which other connections share.
    private let lookups = DispatchQueue(label: "transferd.placement", attributes: .concurrent)

    package init(placement: any SessionPlacement, forwarder: ReplicaForwarder) {
        self.placement = placement
        self.forwarder = forwarder
    }

    /// Serves `request` here (`here`) or forwards it to the replica holding its session. A request
    /// another replica forwarded is served here in any case (its `Transferd-Forwarded` proof
    /// verifies), and so is one the placement sends to this replica's own address. `servedHere`:
    /// a route's own say (it may read the store, so it is asked off the server's threads) that
    /// this replica answers the request although another holds the session.
    /// `copied`: the same from memory only (a copy of the holder's answer kept here), asked on
    /// the server's thread. `keeper`: asked before the request goes to the holder, for what sees
    /// the answer first.
    func route(_ request: HTTPRequest, _ responder: Responder, servedHere: (@Sendable (HTTPRequest) -> Bool)?,
               copied: (@Sendable (HTTPRequest) -> Bool)? = nil,
               keeper: (@Sendable (HTTPRequest) -> (@Sendable (HTTPResponse) -> Void)?)? = nil,
               here: @escaping @Sendable () -> Void)
    {
        guard let session = request.parameters["identifier"], copied?(request) != true else { return here() }
        let known = placement.knownPlace(session)
        if forwarder.proof.verifies(request) { return arrived(request, responder, known: known, here: here) }
        if known == .here { return here() }
        if let known, servedHere == nil { return act(known, request, responder, keeper, here) }
        lookups.async { [self] in
            if servedHere?(request) == true { return here() }
            act(known ?? placement.lookUp(session), request, responder, keeper, here)
        }
    }

    /// Another replica sent `request` here as to the session's holder. It is never sent on (the
    /// lease may be moving, and a request must not go round): served here when this replica holds
    /// the session, or takes it now that no one does; otherwise refused for the client to retry
    /// once the sender has learnt where the session went.
    private func arrived(_ request: HTTPRequest, _ responder: Responder, known: SessionPlace?, here: @escaping @Sendable () -> Void) {
        if known == .here { return here() }
        lookups.async { [self] in
            let place = placement.lookUp(request.parameters["identifier"] ?? "")
            if case .replica(let address) = place, address != forwarder.advertisedAddress {
                responder.respond(SessionForwarding.retry("this session moved to another replica (\(address)) meanwhile"))
            } else if let refusal = SessionForwarding.unservable(place, request) {
                responder.respond(refusal)
            } else {
                here()
            }
        }
    }

    /// The answer when no replica can serve the session now: its holder is gone with the lease not
    /// yet expired, or the store cannot say who holds it; nil when it is placed somewhere.
    private static func unservable(_ place: SessionPlace, _ request: HTTPRequest) -> HTTPResponse? {
        switch place {
        case .moving: retry("this session's replica is gone and its lease not yet expired")
        case .unknown: storeUnreachable(request)
        default: nil
        }
    }

    /// 503 `replica_unavailable`: the session is moving between replicas; a retry soon finds it.
    static func retry(_ why: String) -> HTTPResponse {
        .problem(HTTPProblem(503, "replica_unavailable", "\(why); retry shortly"), headers: HTTPHeaders([("Retry-After", "1")]))
    }

    /// 503 `store_unavailable`: where the session is served cannot be looked up now.
    static func storeUnreachable(_ request: HTTPRequest) -> HTTPResponse {
        Refusal(.unavailable, "store_unavailable",
                "where session \(request.parameters["identifier"] ?? "") is served cannot be looked up: the store cannot be reached; retry shortly").response
    }

    private func act(_ place: SessionPlace, _ request: HTTPRequest, _ responder: Responder,
                     _ keeper: (@Sendable (HTTPRequest) -> (@Sendable (HTTPResponse) -> Void)?)?, _ here: @Sendable () -> Void)
    {
        switch place {
        case .replica(let address) where address != forwarder.advertisedAddress:
            if let keep = keeper?(request) {
                responder.intercept { response, send in
                    keep(response)
                    send(response)
                }
            }
            forwarder.forward(request, to: address, responder)
        default:
            if let refusal = SessionForwarding.unservable(place, request) { return responder.respond(refusal) }
            here()
        }
    }
}
