import Digests
import Glibc
import JSON

/// Resume data (URLSession's `cancel(byProducingResumeData:)`): a readable, signed token — base64 of JSON naming the URL,
/// the validator (ETag or Last-Modified), the offset and the partial file — from which a new
/// download task continues where a cancelled or failed one stopped. The signature (HMAC-SHA256
/// with a key kept in the data directory) makes a tampered token `resume_data_invalid`.
package struct ResumeData: Sendable, Equatable {
    package var url: String
    package var validator: String
    var offset: Int64
    /// The partial file, which the resuming task takes over.
    package var partial: String
    package var destination: String?
    /// `session/task` the data came from.
    var origin: String

    package init(url: String, validator: String, offset: Int64, partial: String, destination: String? = nil, origin: String) {
        self.url = url
        self.validator = validator
        self.offset = offset
        self.partial = partial
        self.destination = destination
        self.origin = origin
    }

    /// The token: base64 of `{"version":1,…,"signature":"<hex>"}`.
    package func token(key: [UInt8]) -> String {
        var json = JSONWriter(capacity: 512)
        json.beginObject()
        writeFields(into: &json)
        json.key("signature"); json.string(ResumeData.sign(payload: payloadBytes, key: key))
        json.endObject()
        return Base64.encode(json.bytes)
    }

    /// Reads and verifies a token; any flaw is the same refusal, so nothing is learned from which.
    package static func parse(_ token: String, key: [UInt8]) throws(Refusal) -> ResumeData {
        let invalid = Refusal.invalid("resume_data", "is not resume data transferd issued, or was altered",
                                       code: "resume_data_invalid")
        guard let bytes = Base64.decode(token.trimmingCharacters()), let value = try? JSONParser.parse(bytes),
              value["version"]?.intValue == 1, let url = value["url"]?.stringValue,
              let validator = value["validator"]?.stringValue, let offset = value["offset"]?.intValue, offset >= 0,
              let partial = value["partial"]?.stringValue, let origin = value["origin"]?.stringValue,
              let signature = value["signature"]?.stringValue
        else { throw invalid }
        let data = ResumeData(url: url, validator: validator, offset: offset, partial: partial,
                              destination: value["destination"]?.stringValue, origin: origin)
        guard ConstantTime.equals(Array(sign(payload: data.payloadBytes, key: key).utf8), Array(signature.utf8)) else {
            throw invalid
        }
        return data
    }

    private var payloadBytes: [UInt8] {
        var json = JSONWriter(capacity: 512)
        json.beginObject()
        writeFields(into: &json)
        json.endObject()
        return json.bytes
    }

    /// The signed fields, always in this order: the signature covers exactly these bytes.
    private func writeFields(into json: inout JSONWriter) {
        json.key("version"); json.int(1)
        json.key("url"); json.string(url)
        json.key("validator"); json.string(validator)
        json.key("offset"); json.int(offset)
        json.key("partial"); json.string(partial)
        json.key("destination"); json.optionalString(destination)
        json.key("origin"); json.string(origin)
    }

    private static func sign(payload: [UInt8], key: [UInt8]) -> String {
        SHA256Stream.hex(HMACSHA256.code(for: payload, key: key))
    }
}
