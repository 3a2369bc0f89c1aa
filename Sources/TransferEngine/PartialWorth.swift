/// When a download's partial file becomes worth a name: once it has been running for a second or
/// has 1 MiB on disk, whichever comes first (README, "Durability"). Until then it may stay
/// an unnamed file (`O_TMPFILE`), which a crash takes with it: fetching it again costs less than
/// naming it. What a crash would lose — time or bytes — decides, so a slow small download is as
/// worth keeping as a fast large one; a response announcing more than a MiB (or not saying how
/// much) is named as its head arrives, since its first MiB is coming.
public enum PartialWorth {
    /// Bytes on disk from which the partial is worth keeping whatever the time.
    public static let bytes: Int64 = 1 << 20
    /// Running time (ns) from which it is worth keeping, once it holds any byte.
    public static let runningNanoseconds: UInt64 = 1_000_000_000

    /// Whether a partial holding `written` bytes (this attempt's and any it continued), of a
    /// transfer running for `running` ns, should have a name now. `announced`: the bytes in all
    /// that its final response announced (`Int64.max` when it did not say); nil before that head.
    public static func isWorthKeeping(written: Int64, running: UInt64, announced: Int64? = nil) -> Bool {
        (announced ?? 0) > bytes || written >= bytes || (written > 0 && running >= runningNanoseconds)
    }
}
