import Foundation

/// The bodies of the API's successful JSON replies in one invocation, recorded by the middleware
/// as they arrive, so that `--json` prints the objects the API sent rather than the generated
/// client's re-encoding of them (which leaves null members out and sorts the rest).
final class Replies: @unchecked Sendable {
    private let lock = NSLock()
    private var bodies: [(operation: String, body: [UInt8])] = []

    /// Which replies hold the objects a command prints.
    enum Selection {
        /// Every reply of the operation, whole, in the order they came.
        case whole(String)
        /// Each element of the reply's list `member`, across every page the operation returned.
        case listed(String, member: String)
        /// The last reply of the operation that is the object with this `id`.
        case latest(String, id: String)
    }

    func record(_ body: [UInt8], operation: String) {
        lock.withLock { bodies.append((operation, body)) }
    }

    /// The JSON texts `selection` picks out.
    func objects(_ selection: Selection) -> [JSONSpans.Text] {
        func of(_ operation: String) -> [JSONSpans.Text] {
            lock.withLock { bodies.filter { $0.operation == operation }.map { $0.body[...] } }
        }
        switch selection {
        case .whole(let operation):
            return of(operation)
        case .listed(let operation, let member):
            return of(operation).flatMap { page in JSONSpans.member(member, of: page).map(JSONSpans.elements) ?? [] }
        case .latest(let operation, let id):
            let quoted = Array("\"\(id)\"".utf8)
            return of(operation).last { JSONSpans.member("id", of: $0)?.elementsEqual(quoted) == true }.map { [$0] } ?? []
        }
    }
}
