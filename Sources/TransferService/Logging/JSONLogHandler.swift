import Glibc
import JSON
import Logging
import Reactor
import TransferModel

/// Writes one JSON object per line to standard error: `ts`, `level`, `logger`, `msg`, then the
/// metadata as fields. Lines are written whole with one `write(2)` so concurrent threads never
/// interleave inside a line.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level = .info
    private let label: String

    public init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var json = JSONWriter(capacity: 256)
        json.beginObject()
        json.key("ts"); json.string(JSONLogHandler.clock.now())
        json.key("level"); json.string(event.level.rawValue)
        json.key("logger"); json.string(label)
        json.key("msg"); json.string(event.message.description)
        // The usual case (an access-log line) brings all its metadata with the event: use it as
        // it is rather than merging into a fresh dictionary.
        var merged = metadata.isEmpty && metadataProvider == nil ? event.metadata ?? [:] : metadata
        if !metadata.isEmpty || metadataProvider != nil {
            if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
            if let extra = event.metadata { merged.merge(extra) { $1 } }
        }
        if let error = event.error { merged["error"] = .string(String(describing: error)) }
        for key in merged.keys.sorted() {
            json.key(escaping: key)
            JSONLogHandler.write(merged[key]!, into: &json)
        }
        json.endObject()
        var line = json.bytes
        line.append(0x0A)
        line.withUnsafeBytes { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }

    /// Formatting a date per line is measurable at tens of thousands of lines a second: the part
    /// up to the seconds is formatted once a second, the milliseconds appended.
    private static let clock = LogClock()

    private static func write(_ value: Logger.Metadata.Value, into json: inout JSONWriter) {
        switch value {
        case .string(let s): json.string(s)
        case .stringConvertible(let c):
            if let n = c as? any BinaryInteger { json.int(Int64(n)) } else if let d = c as? Double { json.double(d) } else if let b = c as? Bool {
                json.bool(b)
            } else {
                json.string(c.description)
            }
        case .array(let items):
            json.beginArray()
            for item in items { write(item, into: &json) }
            json.endArray()
        case .dictionary(let dict):
            json.beginObject()
            for key in dict.keys.sorted() {
                json.key(escaping: key)
                write(dict[key]!, into: &json)
            }
            json.endObject()
        }
    }
}

final class LogClock: Sendable {
    private let cache = Locked<(second: Int64, prefix: String)>((-1, ""))

    func now() -> String {
        let t = Timestamp.now()
        let second = t.milliseconds / 1000
        let prefix = cache.withLock { c -> String in
            if c.second != second {
                let full = Timestamp(milliseconds: second * 1000).rfc3339
                c = (second, String(full.dropLast(4)))
            }
            return c.prefix
        }
        let ms = Int(t.milliseconds % 1000)
        return prefix + (ms < 10 ? "00" : ms < 100 ? "0" : "") + String(ms) + "Z"
    }
}
