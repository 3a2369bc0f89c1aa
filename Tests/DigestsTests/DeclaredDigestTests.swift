import Digests
import Testing

/// Reading the digests an origin declares. The values are RFC 9530's own example (the content
/// `{"hello": "world"}`) and, for MD5, SHA-1 and CRC-32C, Python's hashlib and `crc32c` package
/// over the same bytes.
struct DeclaredDigestTests {
    static let sha256 = "5f8f04f6a3a892aaabbddb6cf273894493773960d4a325b105fee46eef4304f1"
    static let sha512 = "5990cf6959ffed7807680cbca66a23024196a11c765050a1178d40dacbd7f9368f9be01bc008015a7ac8898965bbb04d37279a95d54bbd1c049931d65ef2707b"
    static let md5 = "49dfdd54b01cbcd2d2ab5e9e5ee6b9b9"
    static let crc32c = "43794720"
    static let sha1 = "d3b09abe30cfe2edff4ee9e0a141c93bf5b3af87"
    static let sha256B64 = "X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE="
    static let sha512B64 = "WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew=="

    static func parse(_ headers: [(String, String)], partial: Bool = false) -> [String] {
        DeclaredDigest.parse(headers, partial: partial).map { "\($0.source) \($0.algorithm.rawValue) \($0.hex)" }
    }

    @Test func reprDigestWithBothActiveAlgorithms() {
        #expect(Self.parse([("Repr-Digest", "sha-256=:\(Self.sha256B64):, sha-512=:\(Self.sha512B64):")]) == [
            "repr-digest:sha-256 sha256 \(Self.sha256)",
            "repr-digest:sha-512 sha512 \(Self.sha512)",
        ])
    }

    @Test func contentDigestAndTheDeprecatedKeysTransferdComputes() {
        #expect(Self.parse([("content-digest", "md5=:Sd/dVLAcvNLSq16eXua5uQ==:;p=1, sha=:07CavjDP4u3/TungoUHJO/Wzr4c=:, crc32c=:Q3lHIA==:")]) == [
            "content-digest:md5 md5 \(Self.md5)",
            "content-digest:sha sha1 \(Self.sha1)",
            "content-digest:crc32c crc32c \(Self.crc32c)",
        ])
    }

    @Test func contentMD5AndGoogleHash() {
        #expect(Self.parse([("Content-MD5", " Sd/dVLAcvNLSq16eXua5uQ== "), ("X-Goog-Hash", "crc32c=Q3lHIA==,md5=Sd/dVLAcvNLSq16eXua5uQ==")]) == [
            "content-md5 md5 \(Self.md5)",
            "x-goog-hash:crc32c crc32c \(Self.crc32c)",
            "x-goog-hash:md5 md5 \(Self.md5)",
        ])
    }

    /// Cloud Storage sends one `x-goog-hash` line per algorithm: read as one list.
    @Test func repeatedFieldsAreOneList() {
        #expect(Self.parse([("x-goog-hash", "crc32c=Q3lHIA=="), ("x-goog-hash", "md5=Sd/dVLAcvNLSq16eXua5uQ==")]).count == 2)
    }

    /// A 206 continuing a file: only what describes the whole representation applies.
    @Test func aPartialResponseKeepsOnlyWholeFileDigests() {
        let headers = [("Repr-Digest", "sha-256=:\(Self.sha256B64):"), ("Content-Digest", "sha-256=:\(Self.sha256B64):"),
                       ("Content-MD5", "Sd/dVLAcvNLSq16eXua5uQ=="), ("x-goog-hash", "crc32c=Q3lHIA==")]
        #expect(Self.parse(headers, partial: true).map { $0.split(separator: " ")[0] } == ["repr-digest:sha-256", "x-goog-hash:crc32c"])
        #expect(Self.parse(headers, partial: false).count == 4)
    }

    /// What cannot be read declares nothing: unknown algorithms, tokens instead of byte sequences,
    /// bad base64, a digest of the wrong length.
    @Test(arguments: [
        ("Repr-Digest", "unixsum=:AAAA:"),
        ("Repr-Digest", "sha-256=\(sha256B64)"),
        ("Repr-Digest", "sha-256=:not base64!:"),
        ("Repr-Digest", "sha-256=:\(sha256B64.dropLast(4)):"),
        ("Repr-Digest", "SHA-256=:\(sha256B64):"),
        ("Content-MD5", "Q3lHIA=="),
        ("Content-MD5", "Sd/dVLAcvNLSq16eXua5uQ"),
        ("x-goog-hash", "sha256=\(sha256B64)"),
        ("x-goog-hash", "crc32c"),
        ("Digest", "SHA-256=\(sha256B64)"),
    ])
    func unreadableMembersDeclareNothing(name: String, value: String) {
        #expect(Self.parse([(name, value)]).isEmpty)
    }

    /// Within one field the last of a repeated key wins (RFC 8941 §3.2).
    @Test func aRepeatedKeyInOneFieldKeepsTheLast() {
        let other = String(repeating: "A", count: 43) + "="
        #expect(Self.parse([("Repr-Digest", "sha-256=:\(other):, sha-256=:\(Self.sha256B64):")]) == ["repr-digest:sha-256 sha256 \(Self.sha256)"])
    }

    @Test func base64RoundTripsAndRefusesWhatIsNotPaddedBase64() {
        for n in 0..<70 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let text = DigestBase64.encode(bytes)
            #expect(text.utf8.count == (n + 2) / 3 * 4)
            #expect(n == 0 || DigestBase64.decode(Substring(text)) == bytes)
        }
        for bad in ["", "A", "AAA", "AA=A", "A===", "AA==AA==", "AAA\n", " AAA", "AA-_"] {
            #expect(DigestBase64.decode(Substring(bad)) == nil, "\(bad)")
        }
    }
}
