import JSON

/// The event types a session journals and pushes (URLSession's delegate callbacks).
package enum EventType: String, Sendable, CaseIterable {
    case taskCreated = "task.created"
    case taskResumed = "task.resumed"
    case taskSuspended = "task.suspended"
    case taskResponseReceived = "task.response_received"
    case taskRedirected = "task.redirected"
    case taskResumedAtOffset = "task.resumed_at_offset"
    case taskProgress = "task.progress"
    case taskFinishedDownloading = "task.finished_downloading"
    case taskCompleted = "task.completed"
    case sessionAllTasksFinished = "session.all_tasks_finished"
    case sessionInvalidated = "session.invalidated"

    /// Progress is throttled and live only: never journaled, never re-delivered.
    package var isJournaled: Bool { self != .taskProgress }
}

/// An event as it is journaled, read, streamed and pushed: `{id, seq, session, type, task, at, data}`.
package struct Event: Sendable {
    package let id: String
    /// Per-session, increasing in commit order (0 for unjournaled progress events).
    package let seq: Int64
    package let session: String
    package let type: EventType
    package let task: String?
    package let at: Timestamp
    /// The `data` member, already encoded.
    package let data: [UInt8]

    package init(id: String, seq: Int64, session: String, type: EventType, task: String? = nil, at: Timestamp, data: [UInt8]) {
        self.id = id
        self.seq = seq
        self.session = session
        self.type = type
        self.task = task
        self.at = at
        self.data = data
    }

    package func encode(into json: inout JSONWriter) {
        json.beginObject()
        json.key("id"); json.string(id)
        json.key("seq"); json.int(seq)
        json.key("session"); json.string(session)
        json.key("type"); json.string(type.rawValue)
        json.key("task"); json.optionalString(task)
        json.key("at"); json.string(at.rfc3339)
        json.key("data"); json.raw(data)
        json.endObject()
    }

    package var jsonBytes: [UInt8] {
        var json = JSONWriter(capacity: data.count + 200)
        encode(into: &json)
        return json.bytes
    }

    /// An id whose time is `at`, the event's own: the store finds an event by its id through its
    /// time (`RandomID.time(of:)`) instead of keeping an index of ids.
    package static func newID(at: Timestamp = .now()) -> String { idPrefix + RandomID.make(at: at) }

    /// The id `newID(at:)` made, from its time and random part.
    package static func newID(at: Timestamp, random: String) -> String { idPrefix + RandomID.make(at: at, random: random) }

    package static let idPrefix = "evt_"

    /// The time an id made by `newID(at:)` carries, when it has the form of one.
    package static func time(ofID id: String) -> Timestamp? {
        guard id.hasPrefix(idPrefix) else { return nil }
        return RandomID.time(of: id.utf8.dropFirst(idPrefix.utf8.count))
    }
}

/// An event about to happen: journaled with the change that causes it, which assigns its seq.
package struct EventDraft: Sendable {
    package let type: EventType
    package let task: String?
    package let data: [UInt8]
    /// A `task.completed` of a task that kept the session busy: when no other busy task is left,
    /// `session.all_tasks_finished` follows it (decided when it is numbered).
    package var endsBusyTask = false

    package init(_ type: EventType, task: String?, data: [UInt8] = Array("{}".utf8), endsBusyTask: Bool = false) {
        self.type = type
        self.task = task
        self.data = data
        self.endsBusyTask = endsBusyTask
    }

    /// An event whose data is the task object (`task.completed`).
    static func about(_ record: TaskRecord, _ type: EventType) -> EventDraft {
        EventDraft(type, task: record.id, data: record.jsonBytes())
    }

    /// A lifecycle event (`task.created`, `resumed`, `suspended`) with the task's essentials: the
    /// full object is a GET away, and bulk creation journals one of these per task.
    package static func summary(_ record: TaskRecord, _ type: EventType) -> EventDraft {
        var json = JSONWriter(capacity: 160)
        json.beginObject()
        json.key("kind"); json.string(record.kind.rawValue)
        json.key("state"); json.string(record.state.rawValue)
        json.key("url"); json.string(record.url)
        json.key("description"); json.optionalString(record.description)
        json.endObject()
        return EventDraft(type, task: record.id, data: json.bytes)
    }
}
