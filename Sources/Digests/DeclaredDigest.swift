/// A digest an origin declared in a response header for the bytes it sends.
///
/// Four conventions are read, the ones object stores, CDNs and mirrors use:
/// - `Repr-Digest` (RFC 9530 §3): the whole selected representation, so it holds for a file
///   continued with a 206 as for one fetched whole;
/// - `Content-Digest` (RFC 9530 §2): this message's content only — a 206 carries the digest of its
///   range, not of the file, so it applies only to a whole response;
/// - `Content-MD5` (RFC 1864): the body of this message, likewise only a whole response;
/// - `x-goog-hash` (Cloud Storage): `crc32c=<base64>, md5=<base64>` of the whole object, sent with
///   ranged reads too, which is how Google's clients verify a download they resumed.
public struct DeclaredDigest: Sendable, Equatable {
    /// Where it came from, as `result.verified` reports it: `repr-digest:sha-256`,
    /// `content-digest:sha-512`, `content-md5`, `x-goog-hash:crc32c`.
    public let source: String
    public let algorithm: DigestAlgorithm
    /// Lowercase hex, as `DigestSet` reports the computed one.
    public let hex: String

    public init(source: String, algorithm: DigestAlgorithm, hex: String) {
        self.source = source
        self.algorithm = algorithm
        self.hex = hex
    }

    /// The digests a final response declares for the file it completes. `partial`: the response
    /// is a 206 continuing a file, so only digests of the whole representation apply.
    ///
    /// A member that cannot be read (an algorithm transferd does not compute, bad base64, the
    /// wrong length) declares nothing: what cannot be checked is neither passed nor failed. A
    /// header repeated is read as one list (RFC 9110 §5.3).
    public static func parse(_ headers: [(String, String)], partial: Bool) -> [DeclaredDigest] {
        var found: [DeclaredDigest] = []
        for (name, value) in headers {
            // Every download's head passes here: only names of the four fields' lengths (11, 14)
            // are lower-cased to be compared.
            let length = name.utf8.count
            guard length == 11 || length == 14 else { continue }
            switch name.lowercased() {
            case "repr-digest":
                found += dictionary(value, field: "repr-digest")
            case "content-digest" where !partial:
                found += dictionary(value, field: "content-digest")
            case "content-md5" where !partial:
                if let d = digest(base64: value, algorithm: .md5, source: "content-md5") { found.append(d) }
            case "x-goog-hash":
                for member in value.split(separator: ",") {
                    guard let eq = member.firstIndex(of: "=") else { continue }
                    let key = member[..<eq].trimmingSpaces.lowercased()
                    guard let algorithm = googAlgorithms[key] else { continue }
                    let text = String(member[member.index(after: eq)...])
                    if let d = digest(base64: text, algorithm: algorithm, source: "x-goog-hash:\(key)") { found.append(d) }
                }
            default:
                continue
            }
        }
        guard found.count > 1 else { return found }
        // One check per source: within one field the last of a repeated key wins (RFC 8941
        // §3.2); across repeated fields, the first.
        var seen = Set<String>()
        return found.filter { seen.insert($0.source).inserted }
    }

    /// RFC 9530's algorithm keys (the IANA registry of hash algorithms for HTTP digest fields):
    /// the active `sha-256` and `sha-512`, and the deprecated ones transferd computes anyway.
    static let fieldAlgorithms: [String: DigestAlgorithm] = [
        "sha-256": .sha256, "sha-512": .sha512, "md5": .md5, "sha": .sha1, "crc32c": .crc32c,
    ]
    static let googAlgorithms: [String: DigestAlgorithm] = ["crc32c": .crc32c, "md5": .md5]

    /// A structured-field dictionary (RFC 8941 §3.2) of byte sequences: `sha-256=:<base64>:`,
    /// members separated by commas, each possibly with `;parameters`, which are ignored.
    private static func dictionary(_ value: String, field: String) -> [DeclaredDigest] {
        var out: [DeclaredDigest] = []
        var members: [String: DeclaredDigest] = [:]
        var order: [String] = []
        for member in value.split(separator: ",") {
            guard let eq = member.firstIndex(of: "=") else { continue }
            let key = String(member[..<eq].trimmingSpaces)
            guard let algorithm = fieldAlgorithms[key] else { continue }
            var item = member[member.index(after: eq)...].trimmingSpaces
            if let semicolon = item.firstIndex(of: ";") { item = item[..<semicolon].trimmingSpaces }
            guard item.count >= 2, item.first == ":", item.last == ":" else { continue }
            let text = String(item.dropFirst().dropLast())
            guard let d = digest(base64: text, algorithm: algorithm, source: "\(field):\(key)") else { continue }
            if members[key] == nil { order.append(key) }
            members[key] = d
        }
        for key in order { out.append(members[key]!) }
        return out
    }

    private static func digest(base64 text: String, algorithm: DigestAlgorithm, source: String) -> DeclaredDigest? {
        guard let bytes = DigestBase64.decode(Substring(text).trimmingSpaces), bytes.count == algorithm.byteCount else {
            return nil
        }
        return DeclaredDigest(source: source, algorithm: algorithm, hex: Hex.lowercase(bytes))
    }
}

extension Substring {
    /// Without the spaces and tabs HTTP allows around list members and values.
    var trimmingSpaces: Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return s
    }
}
