import Crypto

/// Lowercase hex sha256, the form every digest takes in the API.
enum SHA256Hex {
    static func of(_ bytes: [UInt8]) -> String { hex(SHA256.hash(data: bytes)) }

    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
