import HTTPServer
import ReplicaForwarding

/// Where a session is served in cluster mode: here, or at the replica that holds it now.
package enum SessionPlace: Sendable, Equatable {
    case here
    /// The holder's address, "host:port", as the replicas reach each other.
    case replica(address: String)
}

/// Which replica holds each session (its lease). Asked once per request to a session, on the
/// server's threads: an answer from memory, never a wait.
package protocol SessionPlacement: Sendable {
    func place(_ session: String) -> SessionPlace
}

/// Requests to a session held by another replica go there, and its answer comes back: any
/// replica answers any call. Decided after the access gate (every replica reads the same
/// principals) and before anything that keeps state about the request (the idempotency ledger,
/// the handler), which is the holder's to keep.
package struct SessionForwarding: Sendable {
    let placement: any SessionPlacement
    let forwarder: ReplicaForwarder

    package init(placement: any SessionPlacement, forwarder: ReplicaForwarder) {
        self.placement = placement
        self.forwarder = forwarder
    }

    /// The replica to send `request` to; nil to serve it here. A request another replica
    /// forwarded is served here in any case (`ReplicaForwarder.forwardedHeader`), and so is one
    /// the placement sends to this replica's own address.
    func holder(of request: HTTPRequest) -> String? {
        guard let session = request.parameters["identifier"], case .replica(let address) = placement.place(session),
              address != forwarder.advertisedAddress, !forwarder.proof.verifies(request)
        else { return nil }
        return address
    }
}
