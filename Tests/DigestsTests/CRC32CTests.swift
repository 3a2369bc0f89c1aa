@testable import Digests
import Testing

/// CRC-32C against the published check values and against a bit-at-a-time reference, and the
/// CPU-instruction path against the table path over many lengths and alignments, so that the
/// interleaved blocks, their join and every tail are covered.
struct CRC32CTests {
    /// The definition itself, one bit at a time: independent of both tested paths.
    static func reference(_ crc: UInt32, _ bytes: some Sequence<UInt8>) -> UInt32 {
        var c = ~crc
        for byte in bytes {
            c ^= UInt32(byte)
            for _ in 0..<8 { c = c & 1 == 1 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
        }
        return ~c
    }

    static func crc(_ bytes: [UInt8], from start: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { CRC32C.update(start, $0) }
    }

    /// The check value of the CRC catalogue, and RFC 3720 (iSCSI) appendix B.4.
    @Test func publishedVectors() {
        #expect(Self.crc(Array("123456789".utf8)) == 0xE306_9283)
        #expect(Self.crc([]) == 0)
        #expect(Self.crc([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(Self.crc([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(Self.crc(Array(0...31)) == 0x46DD_794E)
        #expect(Self.crc(Array((0...31).reversed())) == 0x113F_DB5C)
    }

    /// `update` continues from a finished value, as the `crc32c` packages' `value` argument does.
    @Test func continuesFromAFinishedValue() {
        #expect(Self.crc(Array("56789".utf8), from: Self.crc(Array("1234".utf8))) == 0xE306_9283)
    }

    @Test func hardwareAndSoftwarePathsAgreeOnEveryLengthAndAlignment() {
        var generator = SplitMix64(seed: 0x5EED)
        let buffer = (0..<(3 * 8192 * 4 + 64)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        print("CRC32C.update uses the CPU instruction: \(CRC32C.usesHardware)")
        buffer.withUnsafeBytes { all in
            func check(offset: Int, length: Int, start: UInt32) -> Bool {
                let piece = UnsafeRawBufferPointer(rebasing: all[offset..<offset + length])
                return CRC32C.update(start, piece) == CRC32C.softwareUpdate(start, piece)
            }
            // Every short length (every tail, below and around one 3 x 256 interleaved round)...
            for length in 0...1600 {
                #expect(check(offset: length % 8, length: length, start: UInt32(length)), "length \(length)")
            }
            // ...and long ones at random, across rounds of 3 x 8192 bytes and all alignments.
            for _ in 0..<400 {
                let offset = Int.random(in: 0..<8, using: &generator)
                let length = Int.random(in: 0...(all.count - offset), using: &generator)
                let start = UInt32.random(in: 0...UInt32.max, using: &generator)
                #expect(check(offset: offset, length: length, start: start), "offset \(offset), length \(length)")
            }
        }
        // Both against the definition, on lengths that take each branch of the fast path.
        for length in [7, 8, 9, 767, 768, 769, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 3 * 256 + 13] {
            let piece = Array(buffer[3..<3 + length])
            let expected = Self.reference(0xDEAD_BEEF, piece)
            #expect(Self.crc(piece, from: 0xDEAD_BEEF) == expected, "length \(length)")
            #expect(piece.withUnsafeBytes { CRC32C.softwareUpdate(0xDEAD_BEEF, $0) } == expected, "length \(length)")
        }
    }
}

/// A seeded generator, so a failing input can be found again.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1330_11EB
        return z ^ (z >> 31)
    }
}
