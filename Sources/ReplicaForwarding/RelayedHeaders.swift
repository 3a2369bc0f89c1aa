import HTTPServer

/// Which header fields cross from one replica to another, in each direction. A forwarded request
/// is the client's request, so the fields that describe it end to end go along (Authorization,
/// Idempotency-Key, the preconditions, Content-Type, traceparent…); the fields that describe one
/// connection do not (RFC 9110 §7.6.1), and those the sending side frames itself are written anew.
enum RelayedHeaders {
    /// Connection-specific fields (RFC 9110 §7.6.1, RFC 9112 §7.4), never relayed; besides them,
    /// those a `Connection` field names.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "trailer",
        "proxy-authenticate", "proxy-authorization",
    ]

    /// Written by curl for the request (the holder's address as `Host`, the body's length) or by
    /// the forwarder itself (the request id, the loop guard).
    private static let rewrittenInRequest: Set<String> = [
        "host", "content-length", "expect", "x-request-id", ReplicaForwarder.forwardedHeader.lowercased(),
    ]

    /// Written by this replica's server for the response (`ResponseHead`), or by its access gate:
    /// the holder's rate-limit fields describe the same principal's bucket there, and the client
    /// sees the ones of the replica it asked.
    private static let rewrittenInResponse: Set<String> = [
        "content-length", "date", "x-request-id", "ratelimit", "ratelimit-policy",
    ]

    /// The request's header lines for curl, the forwarder's own included. A field curl would add
    /// by itself and the client did not send is listed empty (`Name:`), which tells curl to leave
    /// it out, so the holder sees what the client sent.
    static func requestLines(_ request: HTTPRequest, from sender: String, proof: ForwardingProof) -> [String] {
        let dropped = hopByHop.union(connectionOptions(request.headers)).union(rewrittenInRequest)
        var lines: [String] = []
        lines.reserveCapacity(request.headers.count + 5)
        for (name, value) in request.headers where !dropped.contains(name.lowercased()) {
            // `Name:` would remove the field; `Name;` is curl's spelling of an empty value.
            lines.append(value.isEmpty ? "\(name);" : "\(name): \(value)")
        }
        lines.append("X-Request-Id: \(request.id)")
        lines.append("\(ReplicaForwarder.forwardedHeader): \(proof.value(for: request, from: sender))")
        lines.append("Expect:")
        if !request.headers.contains("accept") { lines.append("Accept:") }
        if !request.headers.contains("content-type") { lines.append("Content-Type:") }
        return lines
    }

    /// The holder's response fields that go back to the client, in the order received.
    static func responseFields(_ fields: [(String, String)]) -> HTTPHeaders {
        let connection = HTTPHeaders(fields)
        let dropped = hopByHop.union(connectionOptions(connection)).union(rewrittenInResponse)
        var headers = HTTPHeaders(capacity: fields.count)
        for (name, value) in fields where !dropped.contains(name.lowercased()) { headers.add(name, value) }
        return headers
    }

    /// The holder's `Content-Length`, when it sent one that parses.
    static func contentLength(_ fields: [(String, String)]) -> Int? {
        for (name, value) in fields where name.equalsIgnoringASCIICase("content-length") { return Int(value) }
        return nil
    }

    /// Fields a `Connection` header names as options of this connection (RFC 9110 §7.6.1).
    private static func connectionOptions(_ headers: HTTPHeaders) -> Set<String> {
        // Options are tokens: whatever blank surrounds them is not part of them.
        Set(headers.values("connection").flatMap { $0.split(separator: ",") }.map {
            String($0.filter { $0 != " " && $0 != "\t" }).lowercased()
        })
    }
}
