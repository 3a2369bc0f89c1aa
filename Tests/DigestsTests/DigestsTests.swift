import Digests
import Testing

/// Known-answer tests: the digests are the published vectors, so a wrong binding to libcrypto
/// (a wrong length, key or algorithm) cannot pass.
struct DigestsTests {
    @Test func sha256OfAbcIsTheFIPSVector() {
        #expect(SHA256Hex.of(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256Hex.of([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func streamedSHA256EqualsOneShot() {
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let stream = SHA256Stream()
        for piece in stride(from: 0, to: bytes.count, by: 4097) {
            bytes[piece..<min(bytes.count, piece + 4097)].withUnsafeBytes { stream.update($0) }
        }
        #expect(stream.finalizeHex() == SHA256Hex.of(bytes))
    }

    /// RFC 4231, test cases 2 and 6 (a key longer than the block size is hashed first).
    @Test func hmacSHA256MatchesRFC4231() {
        let case2 = HMACSHA256.code(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(SHA256Stream.hex(case2) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let case6 = HMACSHA256.code(for: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                                    key: [UInt8](repeating: 0xaa, count: 131))
        #expect(SHA256Stream.hex(case6) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        // An empty key is a key (HMAC pads it with zeros), not "no key".
        #expect(SHA256Stream.hex(HMACSHA256.code(for: [], key: [])) == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test func constantTimeComparison() {
        #expect(ConstantTime.equals(Array("secret".utf8), Array("secret".utf8)))
        #expect(!ConstantTime.equals(Array("secret".utf8), Array("secreT".utf8)))
        #expect(!ConstantTime.equals(Array("secret".utf8), Array("secret1".utf8)))
        #expect(!ConstantTime.equals(Array("secret".utf8), Array("".utf8)))
        #expect(!ConstantTime.equals(Array("secret".utf8), Array("secre".utf8)))
    }
}
