import Logging
import TransferModel
import TransferStore

/// Replies kept for `Idempotency-Key` where what they guard outlives a restart: a durable
/// session's, or a blob's (`session` nil). An ephemeral session's keys live only in the API's
/// memory, as the session does.
extension TaskCoordinator {
    /// Hands `answer` the reply kept for `scope`: at once when none can be stored for it, else
    /// once the store's readers looked (nil too when the store could not be read: the request
    /// then acts, as one without a key would).
    package func keptReply(scope: String, session: String?, answer: @escaping @Sendable (StoredReply?) -> Void) {
        guard let store = replyStore(session) else { return answer(nil) }
        store.read({ try store.reply(scope: scope, now: Timestamp.now()) }) { answer(try? $0.get()) }
    }

    /// Stores the reply, then `then` (also when it could not be stored: the reply still goes out,
    /// and a retry after a restart acts again, which is what a client without a key gets).
    package func keepReply(_ reply: StoredReply, session: String?, then: @escaping @Sendable () -> Void) {
        guard let store = replyStore(session) else { return then() }
        store.commit([.keepReply(reply, now: Timestamp.now())]) { [logger] result in
            if case .failure(let error) = result {
                logger.warning("an idempotent reply could not be stored", metadata: ["error": .string("\(error)")])
            }
            then()
        }
    }

    private func replyStore(_ session: String?) -> (any TransferStore)? {
        guard let session else { return blobs == nil ? nil : store }
        return registry.session(session).flatMap { $0.mode.isDurable ? store : nil }
    }
}
