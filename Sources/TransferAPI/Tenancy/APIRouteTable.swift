import HTTPServer

/// The only way an API route is registered: with the resource its path names, so the access gate
/// decides before the handler runs, and the handler is given the principal it decided for. A route
/// cannot be added without a rule, nor a handler run without a principal.
struct APIRouteTable {
    typealias Handler = @Sendable (HTTPRequest, Principal, Responder) -> Void
    typealias SinkFactory = @Sendable (HTTPRequest, Principal) throws(HTTPProblem) -> RequestBodySink

    private(set) var table: RouteTable
    let gate: AccessGate
    /// Replies kept for `Idempotency-Key`, shared by every route that honours it.
    let ledger: IdempotencyLedger
    /// Cluster mode: a session's requests go to the replica that holds it. nil: one node.
    let forwarding: SessionForwarding?

    init(_ table: RouteTable, gate: AccessGate, ledger: IdempotencyLedger, forwarding: SessionForwarding? = nil) {
        self.table = table
        self.gate = gate
        self.ledger = ledger
        self.forwarding = forwarding
    }

    /// `idempotent`: the route acts, and honours `Idempotency-Key` (see `IdempotencyLedger`).
    /// `servedHere`: whether this replica answers a request of a session another replica holds
    /// itself (the event journal of a durable session, read from the shared store) rather than
    /// forwarding it to the holder, as every other route of a session does.
    /// `copied`: the same from memory (a copy of the holder's answer); `keeper`: what sees the
    /// holder's answer to a forwarded request first (`CompletedTaskCopies`).
    mutating func add(_ method: String, _ pattern: String, _ resource: APIResource, idempotent: Bool = false,
                      servedHere: (@Sendable (HTTPRequest) -> Bool)? = nil, copied: (@Sendable (HTTPRequest) -> Bool)? = nil,
                      keeper: (@Sendable (HTTPRequest) -> (@Sendable (HTTPResponse) -> Void)?)? = nil, _ handler: @escaping Handler)
    {
        check(pattern, resource)
        let ledger = idempotent ? ledger : nil
        let forwarding = resource == .session || resource == .sessionCreation ? forwarding : nil
        table.add(method, pattern, guard: gate.check(resource)) { request, responder in
            let serve: @Sendable () -> Void = {
                let principal = APIRouteTable.principal(of: request)
                guard let ledger else { return handler(request, principal, responder) }
                ledger.guarded(request, principal, responder) { handler(request, principal, responder) }
            }
            guard let forwarding else { return serve() }
            forwarding.route(request, responder, servedHere: servedHere, copied: copied, keeper: keeper, here: serve)
        }
    }

    mutating func addStreamed(_ method: String, _ pattern: String, _ resource: APIResource, _ factory: @escaping SinkFactory) {
        check(pattern, resource)
        // A streamed body is consumed here as it arrives, so such a route could not be forwarded
        // to the replica holding a session.
        precondition(resource != .session && resource != .sessionCreation, "\(pattern): a session's routes take buffered bodies")
        table.add(method, pattern, guard: gate.check(resource), .streamed({ request throws(HTTPProblem) in
            try factory(request, APIRouteTable.principal(of: request))
        }))
    }

    /// The rule must be able to find what it is about in the path.
    private func check(_ pattern: String, _ resource: APIResource) {
        switch resource {
        case .session, .sessionCreation: precondition(pattern.contains("{identifier}"), "\(pattern) names no session")
        case .blob: precondition(pattern.contains("{blob}"), "\(pattern) names no blob")
        case .service: precondition(!pattern.contains("{"), "\(pattern) names something its rule ignores")
        }
    }

    /// The gate admitted the request, so it set the principal.
    private static func principal(of request: HTTPRequest) -> Principal {
        guard let principal = request.identity as? Principal else {
            preconditionFailure("an API request reached its handler without a principal")
        }
        return principal
    }
}
