import HTTPServer
import JSON
import TransferCore
import TransferModel
import TransferVocabulary

/// What a session PUT or PATCH asks for, validated the same way for both. A member the body leaves
/// out keeps what the session has (a re-attach never resets); PATCH merges its members into what
/// the session has (JSON Merge Patch, RFC 7396) and then validates the result as a PUT would.
enum SessionBody {
    /// A PUT body; `existing` is the session it re-attaches to, if any.
    static func put(_ body: JSONValue, existing: SessionState?, principal: Principal) throws(Refusal) -> TaskCoordinator.SessionRequest {
        var reader = try ObjectReader(body, path: "")
        var errors = FieldErrors()
        var mode = SessionMode.default
        try errors.check { () throws(Refusal) in
            let text = try reader.string("mode") ?? "default"
            guard let parsed = SessionMode(rawValue: text) else { throw Refusal.invalid("mode", "must be background, default or ephemeral") }
            mode = parsed
        }
        let configJSON = reader.raw("configuration") ?? kept(existing) ?? .object([])
        var configuration: SessionConfiguration?
        try errors.check { () throws(Refusal) in configuration = try SessionConfiguration.parse(configJSON) }
        var delegate: Delegate?? = nil
        var generated = false
        try errors.check { () throws(Refusal) in
            guard case .some(let value) = reader.nullableRaw("delegate") else { return }
            if let value, let parsed = try Delegate.parse(value) {
                delegate = .some(parsed.0)
                generated = parsed.generated
            } else {
                delegate = .some(nil)
            }
        }
        try errors.check { () throws(Refusal) in try reader.finish() }
        try errors.finish()
        guard let configuration else { throw Refusal.invalid("configuration", "is not valid") }
        let settings = try SessionSettings(configuration, roots: principal.roots)
        return TaskCoordinator.SessionRequest(mode: mode, configuration: configuration, configurationJSON: configJSON,
                                              settings: settings, delegate: delegate, delegateSecretGenerated: generated)
    }

    /// A PATCH body: `configuration` and `delegate` merge patches, turned into the PUT body they
    /// make of the session as it is.
    static func patch(_ body: JSONValue, of session: SessionState, principal: Principal) throws(Refusal) -> TaskCoordinator.SessionRequest {
        var reader = try ObjectReader(body, path: "")
        let configurationPatch = reader.nullableRaw("configuration")
        let delegatePatch = reader.nullableRaw("delegate")
        try reader.finish()
        var put: [(String, JSONValue)] = [("mode", .string(session.mode.rawValue))]
        session.locked {
            // null: the whole configuration back to its defaults.
            if case .some(let change) = configurationPatch {
                put.append(("configuration", change.map(session.configurationJSON.merged(with:)) ?? .object([])))
            }
            if case .some(let change) = delegatePatch {
                let current = session.delegate?.request ?? .null
                put.append(("delegate", change.map(current.merged(with:)) ?? .null))
            }
        }
        return try self.put(.object(put), existing: session, principal: principal)
    }

    /// The configuration a re-attach keeps: that of the session it finds, unless that session is
    /// over (an invalidated one is made anew, from what the body says).
    private static func kept(_ existing: SessionState?) -> JSONValue? {
        existing?.locked { existing!.lifecycle.status == .invalidated ? nil : existing!.configurationJSON }
    }
}
