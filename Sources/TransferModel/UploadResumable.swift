import JSON
import Lifecycles

/// `upload.resumable`: how an upload may be continued after a lost connection, a 5xx or a
/// restart. `auto` (the default) offers the IETF resumable upload draft on the task's own request:
/// an origin that announces an upload resource (`104`) gets a resumable upload, any other a plain
/// one. `ietf` is the same offer; `tus` speaks tus 1.0.0 to a tus creation URL; `off` sends the
/// request as it is.
package enum UploadResumable: String, Sendable, CaseIterable {
    case auto, ietf, tus, off

    /// The protocol an upload of this setting speaks; nil for a plain upload.
    package var dialect: UploadResumption.Dialect? {
        switch self {
        case .auto, .ietf: .ietf
        case .tus: .tus
        case .off: nil
        }
    }

    static func parse(_ text: String?, field: @autoclosure () -> String) throws(Refusal) -> UploadResumable {
        guard let text else { return .auto }
        guard let value = UploadResumable(rawValue: text) else {
            throw Refusal.invalid(field(), "must be one of \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }
}

extension TaskRecord {
    /// The task's `upload` member, when it has one: `send_digest` and `resumable` (left out at
    /// its default).
    var hasUploadMember: Bool { sendDigest != nil || resumable != .auto }

    func encodeUploadMember(into json: inout JSONWriter) {
        json.beginObject()
        if let sendDigest { json.key("send_digest"); json.string(sendDigest.rawValue) }
        if resumable != .auto { json.key("resumable"); json.string(resumable.rawValue) }
        json.endObject()
    }

    /// Where a resumable upload stands, in the stored document only: its upload resource and the
    /// offset the origin confirmed, so a restart continues it there.
    func encodeUploadState(into json: inout JSONWriter) {
        guard let state = uploadState, let resource = state.resource else { return }
        json.key("upload_state"); json.beginObject()
        json.key("dialect"); json.string(state.dialect.rawValue)
        json.key("resource"); json.string(resource)
        json.key("offset"); json.int(state.offset)
        json.key("length"); json.int(state.length)
        json.key("sent_through"); json.int(state.sentThrough)
        json.key("bytes_resent"); json.int(state.bytesResent)
        json.endObject()
    }

    mutating func decodeUpload(_ value: JSONValue) {
        resumable = value["upload"]?["resumable"]?.stringValue.flatMap(UploadResumable.init(rawValue:)) ?? .auto
        guard let state = value["upload_state"], let dialect = state["dialect"]?.stringValue.flatMap(UploadResumption.Dialect.init),
              let resource = state["resource"]?.stringValue, let length = state["length"]?.intValue else { return }
        uploadState = UploadResumption(dialect: dialect, method: method, url: url, length: length, resource: resource,
                                       offset: state["offset"]?.intValue ?? 0, sentThrough: state["sent_through"]?.intValue ?? 0,
                                       bytesResent: state["bytes_resent"]?.intValue ?? 0)
    }
}
