import Foundation

/// One Server-Sent Event: `id:` (absent for live-only events), `event:` and the joined `data:`.
struct ServerSentEvent: Sendable, Equatable {
    var id: String?
    var type: String
    var data: String
}

/// The event-stream wire format (WHATWG HTML §9.2), read incrementally: bytes go in as they
/// arrive, whole events come out at each blank line. Comments (`: keep-alive`) are skipped.
struct ServerSentEventParser {
    private var pending = Data()
    private var id: String?
    private var type = ""
    private var data: [String] = []

    mutating func feed(_ bytes: Data) -> [ServerSentEvent] {
        pending.append(bytes)
        var events: [ServerSentEvent] = []
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            var line = pending[pending.startIndex..<newline]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            pending = Data(pending[pending.index(after: newline)...])
            if let event = take(String(decoding: line, as: UTF8.self)) { events.append(event) }
        }
        return events
    }

    /// One line: a field of the event being built, or the blank line that dispatches it.
    private mutating func take(_ line: String) -> ServerSentEvent? {
        if line.isEmpty {
            defer { id = nil; type = ""; data = [] }
            guard !data.isEmpty else { return nil }
            return ServerSentEvent(id: id, type: type.isEmpty ? "message" : type, data: data.joined(separator: "\n"))
        }
        if line.hasPrefix(":") { return nil }
        let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        var value = parts.count > 1 ? String(parts[1]) : ""
        if value.hasPrefix(" ") { value.removeFirst() }
        switch parts[0] {
        case "id": id = value
        case "event": type = value
        case "data": data.append(value)
        default: break
        }
        return nil
    }
}
