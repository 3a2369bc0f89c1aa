/// Hex text to bytes and back: digests and hashes as people write them (either case) and as the
/// API writes them (lowercase).
public enum Hex {
    /// nil for an odd number of digits or anything that is not a hex digit.
    public static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        for c in text.utf8 {
            let v: UInt8
            switch c {
            case 0x30...0x39: v = c - 0x30
            case 0x41...0x46: v = c - 0x41 + 10
            case 0x61...0x66: v = c - 0x61 + 10
            default: return nil
            }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        return high == nil ? out : nil
    }

    /// Lowercase hex of any bytes (digests, MACs), the form every digest takes in the API.
    static func lowercase<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var n = 0
            for byte in bytes {
                out[n] = digits.utf8Start[Int(byte >> 4)]
                out[n + 1] = digits.utf8Start[Int(byte & 0xF)]
                n += 2
            }
            return n
        }
    }
}
