import Digests
import HTTPServer
import Reactor
import TransferModel

/// `Idempotency-Key` for the POSTs that create or act (blobs, task actions, batches,
/// acknowledgements, redelivery, session reset and flush): the first successful reply to a key is kept for 24 hours, and the
/// same key with the same body gets that reply again instead of a second action; with another
/// body it is refused. Keys are scoped by principal and path, so tenants never see each other's
/// replies, and the ledger is bounded (oldest dropped first). It lives in memory: after a restart a
/// repeated action is answered by what the action finds (a task already resumed stays resumed).
/// Task creation keeps its keys with the tasks it made (durable where they are).
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

    private let state = Locked(State())

    /// Runs `act` unless the key says its reply is already known (or the key is misused).
    /// `bodyHash` is the sha256 (hex) of a body that was streamed rather than buffered.
    func guarded(_ request: HTTPRequest, _ principal: Principal, _ responder: Responder, bodyHash: String? = nil,
                 _ act: () -> Void)
    {
        guard let key = request.headers["idempotency-key"] else { return act() }
        guard !key.isEmpty, key.utf8.count <= 255, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return responder.respond(Refusal(.malformed, "invalid_idempotency_key",
                                             "Idempotency-Key must be 1–255 printable ASCII characters").response)
        }
        let scope = "\(principal.name)\u{0}\(request.method) \(request.path)\u{0}\(key)"
        let hash = bodyHash ?? SHA256Hex.of(request.body)
        let now = Double(MonotonicClock.now()) / 1e9
        let found: Entry? = state.withLock { s in
            expire(&s, now: now)
            if let entry = s.entries[scope] { return entry }
            s.entries[scope] = Entry(bodyHash: hash, reply: nil, expires: now + IdempotencyLedger.lifetime)
            s.order.append(scope)
            return nil
        }
        guard let found else {
            responder.intercept { [self] response in record(response, for: scope); return response }
            return act()
        }
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

    /// Keeps a successful reply; any other gives the key back, so a retry acts afresh.
    private func record(_ response: HTTPResponse, for scope: String) {
        state.withLock { s in
            guard (200..<300).contains(response.status), case .bytes = response.body else {
                s.entries[scope] = nil
                return
            }
            s.entries[scope]?.reply = response
        }
    }

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
