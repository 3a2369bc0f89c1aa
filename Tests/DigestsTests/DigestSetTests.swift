import Digests
import Testing

/// Every algorithm of a `DigestSet` against values computed independently (Python's hashlib and
/// the `crc32c` package), over published vectors and a megabyte fed whole and in uneven pieces.
struct DigestSetTests {
    static func digests(_ bytes: [UInt8], pieces: [Int] = [], _ algorithms: [DigestAlgorithm] = DigestAlgorithm.allCases) -> [DigestAlgorithm: String] {
        let set = DigestSet(algorithms)
        var start = 0
        for size in pieces + [bytes.count] where start < bytes.count {
            let end = min(bytes.count, start + size)
            bytes[start..<end].withUnsafeBytes { set.update($0) }
            start = end
        }
        return set.finalize()
    }

    @Test func emptyInput() {
        #expect(Self.digests([]) == [
            .sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            .sha512: "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
            .sha1: "da39a3ee5e6b4b0d3255bfef95601890afd80709",
            .md5: "d41d8cd98f00b204e9800998ecf8427e",
            .crc32c: "00000000",
        ])
    }

    /// FIPS 180-2 "abc" (one block), RFC 1321's "abc".
    @Test func abc() {
        #expect(Self.digests(Array("abc".utf8)) == [
            .sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            .sha512: "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
            .sha1: "a9993e364706816aba3e25717850c26c9cd0d89d",
            .md5: "900150983cd24fb0d6963f7d28e17f72",
            .crc32c: "364b3fb7",
        ])
    }

    /// FIPS 180-2's two-block vectors: 448 bits for SHA-1/SHA-256, 896 bits for SHA-512.
    @Test func multiBlockVectors() {
        let m448 = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        let d448 = Self.digests(m448, [.sha256, .sha1])
        #expect(d448 == [
            .sha256: "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
            .sha1: "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
        ])
        let m896 = Array("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu".utf8)
        #expect(Self.digests(m896, [.sha512]) == [
            .sha512: "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909",
        ])
    }

    /// RFC 1321's test suite.
    @Test func md5RFC1321() {
        #expect(Self.digests(Array("message digest".utf8), [.md5])[.md5] == "f96b697d7cb7938d525a2f31aaf161d0")
        #expect(Self.digests(Array("abcdefghijklmnopqrstuvwxyz".utf8), [.md5])[.md5] == "c3fcd3d76192e4007dfb496cca67e13b")
    }

    /// FIPS 180-2's one million "a", fed in pieces that straddle every block boundary.
    @Test func millionAInPieces() {
        let expected: [DigestAlgorithm: String] = [
            .sha256: "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
            .sha512: "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973ebde0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b",
            .sha1: "34aa973cd4c4daa4f61eeb2bdbad27316534016f",
            .md5: "7707d6ae4e027c70eea2a935c2296f21",
            .crc32c: "436fe240",
        ]
        let bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(Self.digests(bytes) == expected)
        #expect(Self.digests(bytes, pieces: [1, 63, 65, 127, 129, 8191, 24577, 3, 100_000]) == expected)
    }

    /// A pseudo-random megabyte (x = x * 1103515245 + 12345 mod 2^32, byte = x >> 24, from x = 1),
    /// whole and in pieces of every small size: each piece's tail must carry into the next.
    @Test func pseudoRandomMegabyteWholeAndInPieces() {
        var x: UInt32 = 1
        let bytes = (0..<1_000_003).map { _ in
            x = x &* 1_103_515_245 &+ 12345
            return UInt8(x >> 24)
        }
        let expected: [DigestAlgorithm: String] = [
            .sha256: "fe1a17f1055f023a1d6d8a0fe81de0fb3ff2fdc6309552a4716ad19f65b5fcaa",
            .sha512: "90e76804b18027463f4c7e5995353f6c995e2d958172f4cf128d9aa5705a428a89929c9c23534d4ff8d2fd26ffb4c9e4726bf5d95233358377687fa56da057d7",
            .sha1: "c26e2ffe3b53b76dcd5d4c30dfa554f3a140c85f",
            .md5: "4c5927497514beec6c49ceba344de9ec",
            .crc32c: "64000c34",
        ]
        #expect(Self.digests(bytes) == expected)
        #expect(Self.digests(bytes, pieces: Array((1...300).reversed()) + Array(repeating: 16_411, count: 40)) == expected)
    }

    @Test func duplicatesAreIgnoredAndOrderKept() {
        let set = DigestSet([.md5, .crc32c, .md5, .sha1, .crc32c])
        #expect(set.algorithms == [.md5, .crc32c, .sha1])
        #expect(set.finalize().keys.sorted { $0.rawValue < $1.rawValue } == [.crc32c, .md5, .sha1])
    }

    @Test func noAlgorithmsComputesNothing() {
        let set = DigestSet([])
        Array("abc".utf8).withUnsafeBytes { set.update($0) }
        #expect(set.algorithms.isEmpty)
        #expect(set.finalize().isEmpty)
    }

    /// Each digest's hex is twice `byteCount` long: the lengths the API validates checksums by.
    @Test func byteCountsMatchTheDigests() {
        let digests = Self.digests(Array("abc".utf8))
        for algorithm in DigestAlgorithm.allCases {
            #expect(digests[algorithm]?.utf8.count == algorithm.byteCount * 2, "\(algorithm)")
        }
        #expect(DigestAlgorithm.allCases.map(\.byteCount) == [32, 64, 20, 16, 4])
        #expect(DigestAlgorithm.allCases.map(\.rawValue) == ["sha256", "sha512", "sha1", "md5", "crc32c"])
    }
}
