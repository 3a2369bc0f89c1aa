/// Writes JSON straight into bytes. The service's hot paths (task GETs, problem documents) use it
/// instead of Foundation's encoder, which allocates a dictionary tree per value.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func beginObject() { separate(); bytes.append(0x7B); needsComma = false }
    public mutating func endObject() { bytes.append(0x7D); needsComma = true }
    public mutating func beginArray() { separate(); bytes.append(0x5B); needsComma = false }
    public mutating func endArray() { bytes.append(0x5D); needsComma = true }

    /// A member name written in the code. Copied as it is: a literal needs no escaping, and
    /// scanning each of a task's sixty-odd names for characters to escape was a measurable part of
    /// encoding one.
    public mutating func key(_ name: StaticString) {
        assert(name.hasPointerRepresentation
               && name.withUTF8Buffer { $0.allSatisfy { $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C && $0 != 0x7F } })
        separate()
        bytes.append(0x22)
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(0x22)
        bytes.append(0x3A)
        needsComma = false
    }

    /// A member name that comes from data (a header name, a log field): escaped like any string.
    public mutating func key(escaping name: String) {
        separate()
        appendQuoted(name)
        bytes.append(0x3A)
        needsComma = false
    }

    public mutating func string(_ value: String) { separate(); appendQuoted(value); needsComma = true }
    public mutating func int<I: BinaryInteger>(_ value: I) {
        separate()
        if let v = Int64(exactly: value) { bytes.appendDecimal(v) } else { bytes.append(contentsOf: String(value).utf8) }
        needsComma = true
    }
    public mutating func bool(_ value: Bool) { separate(); bytes.append(contentsOf: (value ? "true" : "false").utf8); needsComma = true }
    public mutating func null() { separate(); bytes.append(contentsOf: "null".utf8); needsComma = true }

    public mutating func double(_ value: Double) {
        separate()
        if value.isFinite {
            if value == value.rounded(), abs(value) < 1e15 {
                bytes.appendDecimal(Int64(value))
            } else {
                bytes.append(contentsOf: String(value).utf8)
            }
        } else {
            bytes.append(contentsOf: "null".utf8)
        }
        needsComma = true
    }

    /// Splices an already-encoded JSON value.
    public mutating func raw(_ encoded: [UInt8]) { separate(); bytes.append(contentsOf: encoded); needsComma = true }

    public mutating func optionalString(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    private mutating func separate() {
        if needsComma { bytes.append(0x2C) }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func appendQuoted(_ s: String) {
        bytes.append(0x22)
        var s = s
        // Most strings need no escaping: copy them in one go.
        let clean = s.withUTF8 { utf8 -> Bool in
            for c in utf8 where c < 0x20 || c == 0x22 || c == 0x5C || c == 0x7F { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if !clean { appendEscaped(s) }
        bytes.append(0x22)
    }

    private mutating func appendEscaped(_ s: String) {
        for c in s.utf8 {
            switch c {
            case 0x22: bytes.append(0x5C); bytes.append(0x22)
            case 0x5C: bytes.append(0x5C); bytes.append(0x5C)
            case 0x0A: bytes.append(0x5C); bytes.append(0x6E)
            case 0x0D: bytes.append(0x5C); bytes.append(0x72)
            case 0x09: bytes.append(0x5C); bytes.append(0x74)
            case 0x00..<0x20, 0x7F:
                bytes.append(contentsOf: [0x5C, 0x75, 0x30, 0x30])
                bytes.append(Self.hex[Int(c >> 4)])
                bytes.append(Self.hex[Int(c & 0xF)])
            default: bytes.append(c)
            }
        }
    }
}

extension [UInt8] {
    /// Appends the decimal digits of `value` without making a `String` of it first: a task object
    /// holds some twenty numbers, and formatting each through `String` cost more than the rest.
    package mutating func appendDecimal(_ value: Int64) {
        if value < 0 { append(0x2D) }
        var rest = value.magnitude
        var divisor: UInt64 = 1
        while divisor <= rest / 10 { divisor *= 10 }
        repeat {
            append(0x30 + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        } while divisor > 0
    }
}
