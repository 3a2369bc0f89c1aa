/// Comparison of secrets (bearer tokens, signatures) that does not leak, through its timing, how
/// much of a guess was right.
public enum ConstantTime {
    /// Equal-length inputs take the same time whatever their content; inputs of another length
    /// take time proportional to the expected token, not to the input. Inlinable, so every request's
    /// token check is specialized for its byte collection instead of going through generic witnesses.
    @inlinable
    public static func equals<P: RandomAccessCollection<UInt8>>(_ expected: [UInt8], _ presented: P) -> Bool {
        var difference = UInt8(truncatingIfNeeded: expected.count ^ presented.count)
        difference |= expected.count == presented.count ? 0 : 1
        var p = presented.startIndex
        for i in 0..<expected.count {
            let byte = p < presented.endIndex ? presented[p] : 0
            if p < presented.endIndex { p = presented.index(after: p) }
            difference |= expected[i] ^ byte
        }
        return difference == 0
    }
}
