import Crypto
import TransferEngine

/// Lowercase hex sha256, the form every digest takes in the API.
enum SHA256Hex {
    static func of(_ bytes: [UInt8]) -> String { hex(SHA256.hash(data: bytes)) }

    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 { SHA256Stream.hex(Array(digest)) }
}
