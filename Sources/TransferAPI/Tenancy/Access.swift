import TransferModel

/// What the path of an API route names, for deciding who may call it. Every route is registered
/// with one (`APIRouteTable`), so none can skip the decision.
enum APIResource: Sendable {
    /// Nothing in particular (`GET /v1`, `whoami`, the lists, `POST /v1/blobs`): any principal
    /// may call it; lists show only what the caller may see.
    case service
    /// The session `{identifier}` and what is inside it: its tasks, events, files, bodies,
    /// deliveries, cookies.
    case session
    /// `PUT /v1/sessions/{identifier}`: creating (or re-attaching) a session.
    case sessionCreation
    /// The blob `{blob}`.
    case blob
}

/// The decision itself, from the principal, the method and what the path names: pure, so every
/// combination is tested without a server.
enum Access {
    /// nil: allowed. `identifier` and `blob` are the path's parameters; `blobOwner` looks a blob's
    /// owner up (nil: there is no such blob; `.some(nil)`: a blob from before blobs had owners;
    /// a refusal when the store cannot tell).
    static func decide(_ principal: Principal, method: String, resource: APIResource, identifier: String?, blob: String?,
                       blobOwner: (String) throws(Refusal) -> String??) -> Refusal?
    {
        if principal.role == .read && Principal.changes(method) {
            return Refusal(.forbidden, "forbidden", "principal \(principal.name) has the read role: it may look, not change")
        }
        switch resource {
        case .service:
            return nil
        case .session:
            let id = identifier ?? ""
            // The same refusal as for a session that does not exist: existence must not leak.
            return principal.sees(id) ? nil : Refusal.notFound("session \(id)")
        case .sessionCreation:
            let id = identifier ?? ""
            guard principal.sees(id) else {
                let prefixes = (principal.namespaces ?? []).joined(separator: ", ")
                return Refusal(.forbidden, "namespace_not_allowed",
                               "session \(id) is outside the namespaces of principal \(principal.name) (\(prefixes))", field: "identifier")
            }
            return nil
        case .blob:
            let id = blob ?? ""
            let found: String??
            do throws(Refusal) { found = try blobOwner(id) } catch { return error }
            guard let owner = found, principal.owns(blobStoredBy: owner) else { return Refusal.notFound("blob \(id)") }
            return nil
        }
    }
}
