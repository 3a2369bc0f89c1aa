import HTTPServer
import TransferModel

/// Strong entity tags for sessions and tasks, and the conditional requests they answer (RFC 9110
/// §13). A tag is a 64-bit FNV-1a hash of the representation the API sends: every change a client
/// can see changes it, and a task reply (a kilobyte, already encoded) costs one pass over its bytes
/// rather than a second encoding or a cryptographic hash on the hot GET path.
enum EntityTag {
    static func of(_ representation: [UInt8]) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in representation {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return "\"" + String(repeating: "0", count: 16 - hex.utf8.count) + hex + "\""
    }

    /// The representation as a JSON reply carrying its tag.
    static func reply(_ representation: [UInt8], status: Int = 200, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = headers
        headers.set("ETag", of(representation))
        return .json(representation, status: status, headers: headers)
    }

    /// `GET` with `If-None-Match` naming the current tag: 304 with the tag, no body.
    static func notModified(_ request: HTTPRequest, _ representation: [UInt8]) -> HTTPResponse? {
        let tag = of(representation)
        guard matches(request, tag: tag) else { return nil }
        return HTTPResponse(status: 304, headers: HTTPHeaders([("ETag", tag)]))
    }

    /// Whether the request's `If-None-Match` names `tag`. Weak comparison (§13.1.2): a W/ prefix
    /// does not stop a match.
    static func matches(_ request: HTTPRequest, tag: String) -> Bool {
        guard let header = request.headers["if-none-match"] else { return false }
        let listed = header.split(separator: ",").map { $0.trimmingCharacters() }
        return listed.contains(where: { $0 == "*" || $0 == tag || $0 == "W/" + tag })
    }

    /// A change with `If-Match` goes ahead only while the resource is as the client last saw it
    /// (strong comparison, §13.1.1); `current` is nil when it does not exist.
    static func checkIfMatch(_ request: HTTPRequest, current: () throws(Refusal) -> [UInt8]?) throws(Refusal) {
        guard let header = request.headers["if-match"] else { return }
        let listed = header.split(separator: ",").map { $0.trimmingCharacters() }
        if let representation = try current() {
            let tag = of(representation)
            if listed.contains(where: { $0 == "*" || $0 == tag }) { return }
        }
        throw Refusal(.preconditionFailed, "precondition_failed",
                      "If-Match \(header) does not match the resource as it is now: read it again and retry")
    }
}
