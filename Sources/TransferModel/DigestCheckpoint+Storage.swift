import Digests
import JSON

/// A running download's digest checkpoint in its stored document (never in the API's task):
/// `{"offset": 67108864, "tail": 1234, "tail_length": 65536, "states": {"sha256": "<base64 of the context>"}}`.
extension DigestCheckpoint {
    func encode(into json: inout JSONWriter) {
        json.beginObject()
        json.key("offset"); json.int(offset)
        json.key("tail"); json.int(Int64(tail))
        json.key("tail_length"); json.int(tailLength)
        json.key("states"); json.beginObject()
        for algorithm in DigestAlgorithm.allCases {
            guard let state = states[algorithm] else { continue }
            json.key(escaping: algorithm.rawValue); json.string(Base64.encode(state))
        }
        json.endObject()
        json.endObject()
    }

    /// nil for anything unreadable: the download then hashes its partial file from the start.
    static func decode(_ value: JSONValue?) -> DigestCheckpoint? {
        guard let value, let offset = value["offset"]?.intValue, offset >= 0,
              let tail = value["tail"]?.intValue.flatMap(UInt32.init(exactly:)), let tailLength = value["tail_length"]?.intValue,
              case .object(let members)? = value["states"], !members.isEmpty
        else { return nil }
        var states: [DigestAlgorithm: [UInt8]] = [:]
        for (name, text) in members {
            guard let algorithm = DigestAlgorithm(rawValue: name), let bytes = text.stringValue.flatMap(Base64.decode) else { return nil }
            states[algorithm] = bytes
        }
        return DigestCheckpoint(offset: offset, states: states, tail: tail, tailLength: Int(tailLength))
    }
}
