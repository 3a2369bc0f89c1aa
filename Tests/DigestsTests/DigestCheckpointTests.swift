import Digests
import Glibc
import Testing

/// A digest set's state saved part-way and restored into a new set gives what one set fed
/// everything gives; a checkpoint recognizes the file it was taken of, and no other.
struct DigestCheckpointTests {
    static let bytes = (0..<3_000_001).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }

    @Test(arguments: [0, 1, 63, 64, 65, 128, 1_000_000, 2_999_999])
    func restoredStateContinuesTheStream(split: Int) throws {
        let whole = DigestSetTests.digests(Self.bytes)
        let first = DigestSet(DigestAlgorithm.allCases)
        Self.bytes[..<split].withUnsafeBytes { first.update($0) }
        let saved = first.checkpoint()
        // The set goes on after a checkpoint as before.
        Self.bytes[split...].withUnsafeBytes { first.update($0) }
        #expect(first.finalize() == whole)
        let restored = try #require(DigestSet(restoring: saved))
        #expect(Set(restored.algorithms) == Set(DigestAlgorithm.allCases))
        Self.bytes[split...].withUnsafeBytes { restored.update($0) }
        #expect(restored.finalize() == whole)
    }

    @Test func aStateOfAnotherLayoutIsRefused() {
        let saved = DigestSet([.sha256, .crc32c]).checkpoint()
        var wrong = saved
        wrong[.sha256]!.removeLast()
        #expect(DigestSet(restoring: wrong) == nil)
        #expect(DigestSet(restoring: saved) != nil)
    }

    @Test func aCheckpointMatchesTheFileItWasTakenOfOnly() throws {
        let path = "/tmp/transferd-checkpoint-\(getpid())"
        defer { unlink(path) }
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        let content = Array(Self.bytes[..<200_000])
        #expect(content.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == content.count)
        let tail = content[(150_000 - DigestCheckpoint.tailSpan)..<150_000].withUnsafeBytes { CRC32C.update(0, $0) }
        let checkpoint = DigestCheckpoint(offset: 150_000, states: [:], tail: tail, tailLength: DigestCheckpoint.tailSpan)
        #expect(checkpoint.matches(fd: fd))
        #expect(!DigestCheckpoint(offset: 150_001, states: [:], tail: tail, tailLength: DigestCheckpoint.tailSpan).matches(fd: fd))
        #expect(!DigestCheckpoint(offset: 300_000, states: [:], tail: tail, tailLength: DigestCheckpoint.tailSpan).matches(fd: fd),
                "beyond the file's end")
        #expect(pwrite(fd, [0x55], 1, 149_999) == 1)
        #expect(!checkpoint.matches(fd: fd), "a byte of the tail changed")
    }
}
