/// A W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/ §3.2):
/// `version-traceid-parentid-flags`, lower-case hex. A task keeps the one its creating request
/// carried and sends a child of it — same trace id, a span id of its own — on each of its origin
/// requests and webhooks, so a trace follows the work across services.
package struct TraceParent: Sendable, Equatable {
    package let traceID: String
    package let parentID: String
    package let flags: String

    /// A header value, or nil when it is not a valid one — which §3.2.2.x says to ignore, not
    /// refuse: the request is served as if it had none. Version `ff` is invalid; versions above
    /// 00 may append fields, which are dropped (we speak version 00).
    package init?(_ header: String) {
        let bytes = Array(header.utf8)
        guard bytes.count >= 55, bytes[2] == 0x2D, bytes[35] == 0x2D, bytes[52] == 0x2D,
              let version = TraceParent.hex(bytes[0..<2]), version != "ff",
              let traceID = TraceParent.hex(bytes[3..<35]), let parentID = TraceParent.hex(bytes[36..<52]),
              let flags = TraceParent.hex(bytes[53..<55]),
              traceID != String(repeating: "0", count: 32), parentID != String(repeating: "0", count: 16)
        else { return nil }
        // Version 00 is exactly 55 characters; a later version's extra fields follow a dash.
        guard bytes.count == 55 ? true : version != "00" && bytes[55] == 0x2D else { return nil }
        self.traceID = traceID
        self.parentID = parentID
        self.flags = flags
    }

    /// The value as version 00 spells it.
    package var header: String { "00-\(traceID)-\(parentID)-\(flags)" }

    /// A child for one outgoing request: the same trace, a new random span id.
    package func child() -> String {
        var generator = SystemRandomNumberGenerator()
        var span: UInt64 = 0
        while span == 0 { span = generator.next() }
        let hex = String(span, radix: 16)
        return "00-\(traceID)-\(String(repeating: "0", count: 16 - hex.count) + hex)-\(flags)"
    }

    /// Lower-case hex digits only (upper case is invalid in trace context).
    private static func hex(_ bytes: ArraySlice<UInt8>) -> String? {
        guard bytes.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
