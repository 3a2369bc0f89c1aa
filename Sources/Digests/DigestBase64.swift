import COpenSSL

/// Base64 (RFC 4648 §4, padded) of digests as HTTP carries them: `Repr-Digest` byte sequences,
/// `Content-MD5`, `x-goog-hash`. libcrypto's block coder, as the process's one crypto library.
public enum DigestBase64 {
    /// nil unless `text` is whole padded base64 (a multiple of 4 characters).
    public static func decode(_ text: Substring) -> [UInt8]? {
        let input = Array(text.utf8)
        guard !input.isEmpty, input.count % 4 == 0, input.count <= 1024 else { return nil }
        // EVP_DecodeBlock also skips surrounding whitespace and counts padding as zero bytes: the
        // padding is taken off by hand, and anything but the alphabet is refused up front.
        guard input.allSatisfy(isAlphabet) else { return nil }
        let padding = input.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard padding <= 2, !input.dropLast(padding).contains(UInt8(ascii: "=")) else { return nil }
        var out = [UInt8](repeating: 0, count: input.count / 4 * 3)
        let n = EVP_DecodeBlock(&out, input, Int32(input.count))
        guard n >= 0 else { return nil }
        return Array(out.prefix(Int(n) - padding))
    }

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: (bytes.count + 2) / 3 * 4 + 1)
        let n = EVP_EncodeBlock(&out, bytes, Int32(bytes.count))
        return String(decoding: out.prefix(Int(n)), as: UTF8.self)
    }

    private static func isAlphabet(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
            true
        default:
            false
        }
    }
}
