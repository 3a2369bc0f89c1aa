import Digests
import HTTPServer

/// What makes a request forwarded by a replica, rather than one a client dressed up as such: the
/// `Transferd-Forwarded` field carries, after the sender's address, an HMAC-SHA256 of the request's
/// method, target and id under a key every replica derives from the secret they share (the resume
/// key in their shared data directory; a client never sees it). A replica trusts the field only
/// when the code verifies: then it serves the request whatever its placement says (no second hop)
/// and does not spend the principal's request budget again, the sending replica having done so.
package struct ForwardingProof: Sendable {
    private let key: [UInt8]

    /// `secret`: what every replica of the cluster holds alike.
    package init(secret: [UInt8]) {
        key = HMACSHA256.code(for: Array("transferd replica forwarding".utf8), key: secret)
    }

    /// The field's value for `request` sent from `sender`: `address; proof=hex`.
    func value(for request: HTTPRequest, from sender: String) -> String {
        value(method: request.method, target: request.head.target, requestID: request.id, from: sender)
    }

    /// Whether `request` carries a field this cluster's replicas made for it.
    package func verifies(_ request: HTTPRequest) -> Bool {
        verifies(request.headers[ReplicaForwarder.forwardedHeader], method: request.method, target: request.head.target,
                 requestID: request.id)
    }

    package func value(method: String, target: String, requestID: String, from sender: String) -> String {
        "\(sender); proof=\(SHA256Stream.hex(code(method, target, requestID)))"
    }

    package func verifies(_ value: String?, method: String, target: String, requestID: String) -> Bool {
        guard let value, let marker = value.firstIndex(of: ";"), value[marker...].hasPrefix("; proof="),
              let presented = Hex.decode(String(value[value.index(marker, offsetBy: 8)...]))
        else { return false }
        return ConstantTime.equals(code(method, target, requestID), presented)
    }

    private func code(_ method: String, _ target: String, _ id: String) -> [UInt8] {
        HMACSHA256.code(for: Array("\(method) \(target) \(id)".utf8), key: key)
    }
}
