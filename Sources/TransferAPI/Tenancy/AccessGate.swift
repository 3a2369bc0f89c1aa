import HTTPServer
import Logging
import ReplicaForwarding
import TransferModel

/// Stands in front of every `/v1` handler: finds the principal from the bearer token (RFC 6750),
/// spends one of its requests, decides whether it may do this to what the path names, and
/// arranges the audit line of a change. The handler then receives the principal in
/// `HTTPRequest.identity`. A blob's routes decide themselves, once they have read the blob (its
/// owner is in the store, which a guard on the event loop must not wait for: `BlobRoutes`).
package struct AccessGate: Sendable {
    let directory: PrincipalDirectory
    let audit: Logger
    /// Cluster mode: recognises requests another replica forwarded, whose request budget that
    /// replica spent already.
    let forwarded: ForwardingProof?

    package init(directory: PrincipalDirectory, audit: Logger, forwarded: ForwardingProof? = nil) {
        self.directory = directory
        self.audit = audit
        self.forwarded = forwarded
    }

    /// The guard of a route naming `resource`; nil: a `/v1` path no route matches (authenticated,
    /// so that an unauthorised caller learns nothing of which paths exist).
    func check(_ resource: APIResource?) -> RequestGuard {
        { request in admit(request, resource) }
    }

    func admit(_ request: HTTPRequest, _ resource: APIResource?) -> Admission {
        let principal: Principal
        switch authenticate(request) {
        case .success(let p): principal = p
        case .failure(let challenge): return .denied(challenge.response)
        }
        var headers = HTTPHeaders()
        var refusal: Refusal?
        var retryAfter: Int?
        if let rate = principal.requestRate, forwarded?.verifies(request) != true {
            let decision = rate.take()
            headers.add("RateLimit-Policy", rate.policyField)
            headers.add("RateLimit", RequestBucket.stateField(decision))
            if !decision.allowed {
                refusal = Refusal(.tooMany, "rate_limited",
                                  "principal \(principal.name) is over its rate of \(rate.rate.formatted) requests a second; retry in \(decision.retryAfter) s")
                retryAfter = decision.retryAfter
            }
        }
        if refusal == nil, let resource, resource != .blob {
            refusal = Access.decide(principal, method: request.method, resource: resource, identifier: request.parameters["identifier"],
                                    blob: nil) { _ in nil }
        }
        var denial = refusal?.response
        if let retryAfter { denial?.headers.add("Retry-After", String(retryAfter)) }
        return Admission(denial: denial, identity: principal, responseHeaders: headers,
                         completion: Principal.changes(request.method) ? auditLine(request, principal) : nil)
    }

    /// Every change, allowed or not, is logged with who asked for it, what it named (session and
    /// task, from the path, or the task a creation made, from its `Location`) and how it ended.
    private func auditLine(_ request: HTTPRequest, _ principal: Principal) -> @Sendable (Int, String?) -> Void {
        let (audit, method, path, id, name) = (audit, request.method, String(request.path), request.id, principal.name)
        let (session, task) = (request.parameters["identifier"], request.parameters["task"])
        let traceparent = request.headers["traceparent"]
        return { status, location in
            var metadata: Logger.Metadata = [
                "principal": .string(name), "method": .string(method), "path": .string(path),
                "status": .stringConvertible(status), "request_id": .string(id),
            ]
            if let session { metadata["session"] = .string(session) }
            if let task = task ?? AccessGate.createdTask(location, in: session) { metadata["task"] = .string(task) }
            if let traceparent, let trace = TraceParent(traceparent) { metadata["traceparent"] = .string(trace.header) }
            audit.notice("audit", metadata: metadata)
        }
    }

    /// The task id of `/v1/sessions/{session}/tasks/{task}`, the `Location` of a created task.
    static func createdTask(_ location: String?, in session: String?) -> String? {
        guard let location, let session else { return nil }
        let prefix = "/v1/sessions/\(session)/tasks/"
        guard location.hasPrefix(prefix) else { return nil }
        let id = location.dropFirst(prefix.count)
        return id.isEmpty || id.contains("/") ? nil : String(id)
    }

    /// A 401 and why.
    struct Challenge: Error {
        let detail: String
        let error: String?

        var response: HTTPResponse {
            var value = "Bearer realm=\"transferd\""
            if let error { value += ", error=\"\(error)\"" }
            return .problem(HTTPProblem(401, "unauthorized", detail), headers: HTTPHeaders([("WWW-Authenticate", value)]))
        }
    }

    func authenticate(_ request: HTTPRequest) -> Result<Principal, Challenge> {
        if let anonymous = directory.anonymousPrincipal { return .success(anonymous) }
        guard let header = request.headers["authorization"] else {
            return .failure(Challenge(detail: "missing bearer token", error: nil))
        }
        // credentials = auth-scheme 1*SP token68 (RFC 9110 §11.4): one or more spaces. Read from
        // the header's bytes: this runs on every request.
        var value = header
        let found: Principal?? = value.withUTF8 { bytes in
            let scheme = bytes.firstIndex(of: 0x20) ?? bytes.count
            // The scheme is case-insensitive (RFC 9110 §11.1); `| 0x20` lowercases the letters of "bearer".
            guard scheme == 6, bytes.prefix(6).elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }) else { return nil }
            let presented = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[scheme...].drop { $0 == 0x20 }))
            guard !presented.isEmpty else { return nil }
            return .some(directory.authenticate(presented))
        }
        switch found {
        case nil: return .failure(Challenge(detail: "the Authorization header must use the Bearer scheme", error: "invalid_request"))
        case .some(nil): return .failure(Challenge(detail: "invalid bearer token", error: "invalid_token"))
        case .some(let principal?): return .success(principal)
        }
    }
}
