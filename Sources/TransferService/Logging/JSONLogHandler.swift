import Glibc
import HTTPServer
import Logging
import Synchronization

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
        json.key("ts"); json.string(Timestamp.now().rfc3339)
        json.key("level"); json.string(event.level.rawValue)
        json.key("logger"); json.string(label)
        json.key("msg"); json.string(event.message.description)
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        if let error = event.error { merged["error"] = .string(String(describing: error)) }
        for key in merged.keys.sorted() {
            json.key(key)
            JSONLogHandler.write(merged[key]!, into: &json)
        }
        json.endObject()
        var line = json.bytes
        line.append(0x0A)
        line.withUnsafeBytes { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }

    private static func write(_ value: Logger.Metadata.Value, into json: inout JSONWriter) {
        switch value {
        case .string(let s): json.string(s)
        case .stringConvertible(let c):
            if let n = c as? Int { json.int(n) } else if let d = c as? Double { json.double(d) } else { json.string(c.description) }
        case .array(let items):
            json.beginArray()
            for item in items { write(item, into: &json) }
            json.endArray()
        case .dictionary(let dict):
            json.beginObject()
            for key in dict.keys.sorted() {
                json.key(key)
                write(dict[key]!, into: &json)
            }
            json.endObject()
        }
    }
}
