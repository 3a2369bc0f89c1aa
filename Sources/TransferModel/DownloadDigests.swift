import Digests
import JSON

/// A download's `checksum`: one digest the file must have, in any algorithm transferd computes.
package struct Checksum: Sendable, Equatable {
    package let algorithm: DigestAlgorithm
    /// Lowercase hex.
    package let hex: String

    package init(algorithm: DigestAlgorithm, hex: String) {
        self.algorithm = algorithm
        self.hex = hex
    }

    /// `{"<algorithm>": "<hex>"}`: exactly one member, its value the algorithm's length in hex.
    static func parse(_ reader: ObjectReader) throws(Refusal) -> Checksum {
        var r = reader
        var found: Checksum?
        for algorithm in DigestAlgorithm.allCases {
            guard let text = try r.string(algorithm.rawValue, maxLength: 128) else { continue }
            let hex = text.lowercased()
            guard hex.utf8.count == algorithm.byteCount * 2, Hex.decode(hex) != nil else {
                throw Refusal.invalid(r.field(algorithm.rawValue), "must be \(algorithm.byteCount * 2) hexadecimal digits")
            }
            guard found == nil else { throw Refusal.invalid(r.path, "must name one algorithm, not several") }
            found = Checksum(algorithm: algorithm, hex: hex)
        }
        try r.finish()
        guard let found else {
            throw Refusal.invalid(r.path, "must name one of \(DigestAlgorithm.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return found
    }

    func encode(into json: inout JSONWriter) {
        json.beginObject(); json.key(escaping: algorithm.rawValue); json.string(hex); json.endObject()
    }
}

extension DigestAlgorithm {
    /// What a download computes unless asked otherwise (and what records from before
    /// `download.digests` computed).
    package static let defaults: [DigestAlgorithm] = [.sha256]

    /// A list of algorithm names (`download.digests`, `--default-digests`): known names, each once.
    package static func parseList(_ names: [String], field: String) throws(Refusal) -> [DigestAlgorithm] {
        var out: [DigestAlgorithm] = []
        for (i, name) in names.enumerated() {
            guard let algorithm = DigestAlgorithm(rawValue: name) else {
                throw Refusal.invalid("\(field)[\(i)]", "must be one of \(allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard !out.contains(algorithm) else { throw Refusal.invalid("\(field)[\(i)]", "\(name) is listed twice") }
            out.append(algorithm)
        }
        return out
    }

    static func encodeList(_ list: [DigestAlgorithm], into json: inout JSONWriter) {
        json.beginArray()
        for a in list { json.string(a.rawValue) }
        json.endArray()
    }

    static func decodeList(_ value: JSONValue?) -> [DigestAlgorithm]? {
        value?.arrayValue.map { $0.compactMap { $0.stringValue.flatMap(DigestAlgorithm.init(rawValue:)) } }
    }
}

extension DownloadResult {
    /// `{"sha256": "…", "crc32c": "…"}` in the algorithms' fixed order.
    func encodeDigests(into json: inout JSONWriter) {
        json.beginObject()
        for (algorithm, hex) in digests { json.key(escaping: algorithm.rawValue); json.string(hex) }
        json.endObject()
    }

    static func decodeDigests(_ value: JSONValue?) -> [(DigestAlgorithm, String)] {
        guard case .object(let members)? = value else { return [] }
        return members.compactMap { name, v in DigestAlgorithm(rawValue: name).flatMap { a in v.stringValue.map { (a, $0) } } }
    }
}

extension TaskRecord {
    /// What the transfer computes: the digests asked for, and the checksum's algorithm.
    package var computedDigests: [DigestAlgorithm] {
        guard let checksum, !digests.contains(checksum.algorithm) else { return digests }
        return digests + [checksum.algorithm]
    }
}
