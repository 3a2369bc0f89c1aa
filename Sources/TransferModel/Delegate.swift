import JSON
import TransferVocabulary

/// A session's `delegate`: where its events are pushed, signed with its secret (Standard Webhooks).
package struct Delegate: Sendable, Equatable {
    package var url: String
    /// `whsec_` + base64 of the key.
    package var secret: String
    /// The types pushed; nil for all.
    var events: Set<EventType>?
    /// How many of the session's events may be out to the receiver at once; above 1 the receiver
    /// puts them in order by their `seq`.
    package var maxInFlight = 1
    /// Set when the receiver answered 410 Gone: nothing more is pushed until the delegate is set again.
    package var disabled = false

    static let maxInFlightRange: ClosedRange<Int64> = 1...64

    package func wants(_ type: EventType) -> Bool {
        guard let events else { return type.isJournaled }
        return events.contains(type)
    }

    /// The HMAC key: the base64 part of the secret, decoded.
    package var key: [UInt8] { Base64.decode(String(secret.dropFirst(6))) ?? [] }

    static func generateSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let key = (0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "whsec_" + Base64.encode(key)
    }

    /// Validates `delegate` from a session PUT; a missing secret is generated (and returned once).
    package static func parse(_ value: JSONValue?, field: String = "delegate") throws(Refusal) -> (Delegate, generated: Bool)? {
        guard let value else { return nil }
        var r = try ObjectReader(value, path: field)
        let url = try r.requiredString("url", maxLength: 4096)
        guard let parts = URLParts(url), parts.isHTTP, !parts.host.isEmpty else {
            throw Refusal.invalid(r.field("url"), "must be an absolute http or https URL", code: "unsupported_url")
        }
        var generated = false
        let secret: String
        if let given = try r.string("secret", maxLength: 1024) {
            guard given.hasPrefix("whsec_"), let key = Base64.decode(String(given.dropFirst(6))), key.count >= 16, key.count <= 64 else {
                throw Refusal.invalid(r.field("secret"), "must be whsec_ followed by the base64 of 16 to 64 random bytes")
            }
            secret = given
        } else {
            secret = generateSecret()
            generated = true
        }
        var events: Set<EventType>?
        if let list = try r.array("events", maxCount: 64) {
            events = try Set(list.enumerated().map { (i, item) throws(Refusal) -> EventType in
                guard let name = item.stringValue, let type = EventType(rawValue: name) else {
                    throw Refusal.invalid("\(r.field("events"))[\(i)]", "is not an event type")
                }
                return type
            })
        }
        let maxInFlight = try r.integer("max_in_flight", in: maxInFlightRange).map(Int.init) ?? 1
        try r.finish()
        return (Delegate(url: url, secret: secret, events: events, maxInFlight: maxInFlight), generated)
    }

    /// As the API shows it: never the secret, except the one reply that hands out a generated one.
    package func encode(into json: inout JSONWriter, secret shown: String? = nil) {
        json.beginObject()
        json.key("url"); json.string(url)
        if let shown { json.key("secret"); json.string(shown) }
        json.key("events")
        if let events {
            json.beginArray()
            for type in EventType.allCases where events.contains(type) { json.string(type.rawValue) }
            json.endArray()
        } else {
            json.null()
        }
        json.key("max_in_flight"); json.int(maxInFlight)
        json.key("disabled"); json.bool(disabled)
        json.endObject()
    }

    /// The delegate as a client would give it (with its secret): what a merge patch applies to.
    package var request: JSONValue {
        var members: [(String, JSONValue)] = [("url", .string(url)), ("secret", .string(secret))]
        if let events { members.append(("events", .array(EventType.allCases.filter(events.contains).map { .string($0.rawValue) }))) }
        members.append(("max_in_flight", .number(Double(maxInFlight))))
        return .object(members)
    }

    /// As it is stored: with the secret (durable sessions keep their delegate across restarts).
    package var stored: String {
        var json = JSONWriter()
        json.beginObject()
        json.key("url"); json.string(url)
        json.key("secret"); json.string(secret)
        json.key("events")
        if let events { json.beginArray(); events.map(\.rawValue).sorted().forEach { json.string($0) }; json.endArray() } else { json.null() }
        json.key("max_in_flight"); json.int(maxInFlight)
        json.key("disabled"); json.bool(disabled)
        json.endObject()
        return String(decoding: json.bytes, as: UTF8.self)
    }

    init(url: String, secret: String, events: Set<EventType>?, maxInFlight: Int = 1, disabled: Bool = false) {
        self.url = url
        self.secret = secret
        self.events = events
        self.maxInFlight = maxInFlight
        self.disabled = disabled
    }

    package init?(stored: String) {
        guard let v = try? JSONParser.parse(Array(stored.utf8)), let url = v["url"]?.stringValue,
              let secret = v["secret"]?.stringValue else { return nil }
        // Delegates stored before `max_in_flight` existed delivered one at a time.
        self.init(url: url, secret: secret, events: v["events"]?.arrayValue.map { Set($0.compactMap { $0.stringValue.flatMap(EventType.init(rawValue:)) }) },
                  maxInFlight: v["max_in_flight"]?.intValue.map(Int.init) ?? 1, disabled: v["disabled"]?.boolValue ?? false)
    }
}
