import Digests
import HTTPServer
import Reactor
import TransferCore
import TransferModel

/// `Idempotency-Key` for the POSTs that create or act (blobs, task actions, batches,
/// acknowledgements, redelivery, session reset and flush): the first successful reply to a key is
/// kept for 24 hours, and the same key with the same body gets that reply again instead of a
/// second action; with another body it is refused. Keys are scoped by principal, method and path,
/// so tenants never see each other's replies. Replies live in memory (at most `capacity`, oldest
/// dropped first) and, where what they guard is durable (a durable session's, a blob), in the
/// store as well — committed before the reply goes out, so a retry after a restart finds it.
/// Task creation keeps its keys with the tasks it made instead.
final class IdempotencyLedger: Sendable {
    static let lifetime: Double = 24 * 3600
    static let capacity = 100_000

    private struct Entry {
        let bodyHash: String
        /// nil while the first request is still being answered.
        var reply: HTTPResponse?
        let expires: Double
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Scopes in the order they were claimed: the front expires first.
        var order: [String] = []
        var orderStart = 0
    }

    private let coordinator: TaskCoordinator
    private let state = Locked(State())

    init(coordinator: TaskCoordinator) {
        self.coordinator = coordinator
    }

    /// Runs `act` unless the key says its reply is already known (or the key is misused), else
    /// `declined` once it answered. Either may run later, on the store's readers, when the key
    /// must be looked up in the store. `bodyHash` is the sha256 (hex) of a body that was streamed
    /// rather than buffered.
    func guarded(_ request: HTTPRequest, _ principal: Principal, _ responder: Responder, bodyHash: String? = nil,
                 declined: @escaping @Sendable () -> Void = {}, _ act: @escaping @Sendable () -> Void)
    {
        let key: String
        do {
            guard let given = try IdempotencyLedger.key(request) else { return act() }
            key = given
        } catch {
            declined()
            return responder.respond(error.response)
        }
        // Spaces part them: none can be in a principal name, a request path or a key.
        let scope = "\(principal.name) \(request.method) \(request.path) \(key)"
        let session = request.parameters["identifier"]
        let hash = bodyHash ?? SHA256Hex.of(request.body)
        claim(scope, hash: hash, session: session) { [self] found in
            guard let found else {
                responder.intercept { [self] response, send in keep(response, scope: scope, hash: hash, session: session, then: send) }
                return act()
            }
            declined()
            guard found.bodyHash == hash else {
                return responder.respond(Refusal(.invalid, "idempotency_key_reused",
                                                 "Idempotency-Key \(key) was used with a different request body").response)
            }
            guard var reply = found.reply else {
                return responder.respond(Refusal(.conflict, "idempotency_key_in_use",
                                                 "a request with Idempotency-Key \(key) is still being answered").response)
            }
            reply.headers.set("Idempotent-Replayed", "true")
            responder.respond(reply)
        }
    }

    /// Hands `then` the entry for `scope` if there is one (in memory, or stored before a restart);
    /// otherwise nil, and the scope is claimed for this request.
    private func claim(_ scope: String, hash: String, session: String?, then: @escaping @Sendable (Entry?) -> Void) {
        let now = IdempotencyLedger.now()
        if let found = state.withLock({ s -> Entry? in
            expire(&s, now: now)
            return s.entries[scope]
        }) {
            return then(found)
        }
        coordinator.keptReply(scope: scope, session: session) { [self] kept in
            let stored = kept.map { reply in
                Entry(bodyHash: reply.bodyHash, reply: IdempotencyLedger.response(of: reply), expires: now + IdempotencyLedger.lifetime)
            }
            then(state.withLock { s in
                if let entry = s.entries[scope] { return entry }
                s.entries[scope] = stored ?? Entry(bodyHash: hash, reply: nil, expires: now + IdempotencyLedger.lifetime)
                s.order.append(scope)
                return stored
            })
        }
    }

    /// Keeps a successful reply (stored first where it must outlive a restart), then sends it; any
    /// other gives the key back, so a retry acts afresh.
    private func keep(_ response: HTTPResponse, scope: String, hash: String, session: String?,
                      then send: @escaping @Sendable (HTTPResponse) -> Void)
    {
        guard (200..<300).contains(response.status), case .bytes(let body) = response.body else {
            state.withLock { $0.entries[scope] = nil }
            return send(response)
        }
        let headers = response.headers.map { "\($0.name): \($0.value)\n" }.joined()
        let reply = StoredReply(scope: scope, bodyHash: hash, status: response.status, headers: headers, body: body,
                                expiresAt: Timestamp(milliseconds: Timestamp.now().milliseconds + Int64(IdempotencyLedger.lifetime * 1000)))
        coordinator.keepReply(reply, session: session) { [self] in
            state.withLock { $0.entries[scope]?.reply = response }
            send(response)
        }
    }

    /// The request's `Idempotency-Key`, if it has one: 1–255 printable ASCII characters.
    static func key(_ request: HTTPRequest) throws(Refusal) -> String? {
        guard let key = request.headers["idempotency-key"] else { return nil }
        guard !key.isEmpty, key.utf8.count <= 255, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw Refusal(.malformed, "invalid_idempotency_key", "Idempotency-Key must be 1–255 printable ASCII characters")
        }
        return key
    }

    private static func response(of reply: StoredReply) -> HTTPResponse {
        var headers = HTTPHeaders()
        for line in reply.headers.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.add(String(line[..<colon]), String(line[line.index(after: colon)...].dropFirst()))
        }
        return HTTPResponse(status: reply.status, headers: headers, body: .bytes(reply.body))
    }

    private static func now() -> Double { Double(MonotonicClock.now()) / 1e9 }

    /// Drops what is older than a day, and the oldest beyond `capacity`.
    private func expire(_ s: inout State, now: Double) {
        while s.orderStart < s.order.count {
            let scope = s.order[s.orderStart]
            if let entry = s.entries[scope] {
                guard entry.expires <= now || s.entries.count > IdempotencyLedger.capacity else { break }
                s.entries[scope] = nil
            }
            s.orderStart += 1
        }
        if s.orderStart > 1024, s.orderStart * 2 > s.order.count {
            s.order.removeFirst(s.orderStart)
            s.orderStart = 0
        }
    }
}
