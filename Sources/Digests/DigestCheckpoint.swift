import Glibc

/// Where a file's digests stood: the running state of each algorithm after the first `offset`
/// bytes. Kept with a download's record, it lets the download continue after a restart (with
/// `Range`) and hash only what it has not hashed yet, instead of reading its partial file again.
///
/// A checkpoint describes bytes that are on disk only as long as the file is not started over; it
/// carries the CRC-32C of the last bytes it covers (`tail`), so a file rewritten since — a
/// restart from zero between the checkpoint and a crash — is told apart before the checkpoint is
/// trusted (`matches`).
public struct DigestCheckpoint: Sendable, Equatable {
    public var offset: Int64
    /// `DigestSet.checkpoint()`: each algorithm's context, as plain bytes.
    public var states: [DigestAlgorithm: [UInt8]]
    /// CRC-32C of the `tailLength` bytes before `offset`.
    public var tail: UInt32
    public var tailLength: Int

    public init(offset: Int64, states: [DigestAlgorithm: [UInt8]], tail: UInt32, tailLength: Int) {
        self.offset = offset
        self.states = states
        self.tail = tail
        self.tailLength = tailLength
    }

    /// How much of what a checkpoint covers its tail vouches for.
    public static let tailSpan = 64 << 10

    /// Whether the file behind `fd` still holds, before `offset`, the tail this checkpoint saw
    /// (one read of at most `tailSpan` bytes).
    public func matches(fd: Int32) -> Bool {
        guard tailLength > 0, tailLength <= DigestCheckpoint.tailSpan, Int64(tailLength) <= offset else { return false }
        var bytes = [UInt8](repeating: 0, count: tailLength)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, tailLength, off_t(offset - Int64(tailLength))) }
        guard n == tailLength else { return false }
        return bytes.withUnsafeBytes { CRC32C.update(0, $0) } == tail
    }

    /// Whether it holds exactly these algorithms (a checkpoint of others cannot serve).
    public func covers(_ algorithms: [DigestAlgorithm]) -> Bool {
        Set(states.keys) == Set(algorithms)
    }
}
