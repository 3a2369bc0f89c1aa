import JSON
import Lifecycles
import Logging
import TransferModel
import TransferStore

/// A session as the store keeps it, and back.
extension SessionState {
    /// The session's row (lock held).
    var storedRow: StoredSession {
        var json = JSONWriter()
        json.value(configurationJSON)
        return StoredSession(identifier: identifier, mode: mode.rawValue,
                             configuration: String(decoding: json.bytes, as: UTF8.self), delegate: delegate?.stored,
                             lifecycle: lifecycle.status.rawValue, invalidateMode: lifecycle.invalidateMode?.rawValue,
                             createdAt: createdAt.milliseconds)
    }

    /// A stored session as a value in memory, not yet registered; nil (logged) when its stored
    /// configuration no longer validates.
    static func restoring(_ row: StoredSession, summary: SessionSummary?, at now: Timestamp, logger: Logger) -> SessionState? {
        guard let mode = SessionMode(rawValue: row.mode),
              let json = try? JSONParser.parse(Array(row.configuration.utf8)),
              let configuration = try? SessionConfiguration.parse(json)
        else {
            logger.error("skipping a stored session that no longer validates", metadata: ["session": .string(row.identifier)])
            return nil
        }
        let session = SessionState(identifier: row.identifier, mode: mode, configuration: configuration,
                                   configurationJSON: json, createdAt: Timestamp(milliseconds: row.createdAt))
        session.lifecycle = SessionLifecycle(restoring: SessionLifecycle.Status(rawValue: row.lifecycle) ?? .active,
                                             mode: row.invalidateMode.flatMap(SessionLifecycle.InvalidateMode.init(rawValue:)))
        session.delegate = row.delegate.flatMap(Delegate.init(stored:))
        if session.lifecycle.status == .invalidated { session.invalidatedAt = now }
        session.nextEventSeq = row.lastEventSeq + 1
        session.ackedThrough = row.ackedThrough
        session.deliveredThrough = row.deliveredThrough
        if let summary {
            session.counts = summary.counts
            session.nextSequence = summary.maxSequence + 1
        }
        return session
    }

    /// Withdraws the session's delegate and stops its channel: the session goes (or is another
    /// replica's now), and nothing more of it is delivered from here.
    func withdrawDelegate() {
        let stopping: DelegateChannel? = locked {
            delegate = nil
            defer { channel = nil }
            return channel
        }
        stopping?.stop()
    }
}
