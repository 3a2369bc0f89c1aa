/// Byte classes from RFC 9110 §5.6 and RFC 3986 §2, as used by the parsers.
enum CharacterClass {
    @inline(__always) static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    @inline(__always) static func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A }

    @inline(__always) static func isWhitespace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 }

    @inline(__always) static func hexValue(_ c: UInt8) -> Int? {
        switch c {
        case 0x30...0x39: Int(c - 0x30)
        case 0x41...0x46: Int(c - 0x41 + 10)
        case 0x61...0x66: Int(c - 0x61 + 10)
        default: nil
        }
    }

    /// tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
    /// / DIGIT / ALPHA
    static func isTokenChar(_ c: UInt8) -> Bool {
        if isDigit(c) || isAlpha(c) { return true }
        switch c {
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: return true
        default: return false
        }
    }

    /// field-vchar / SP / HTAB, with obs-text allowed: everything but controls (NUL, CR, LF…) and DEL.
    @inline(__always) static func isFieldValueChar(_ c: UInt8) -> Bool {
        c == 0x09 || (c >= 0x20 && c != 0x7F)
    }

    static func isUnreserved(_ c: UInt8) -> Bool {
        isDigit(c) || isAlpha(c) || c == 0x2D || c == 0x2E || c == 0x5F || c == 0x7E
    }

    static func isSubDelim(_ c: UInt8) -> Bool {
        switch c {
        case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D: return true
        default: return false
        }
    }
}

/// ASCII helpers over raw bytes, so that the parser can recognise field names and tokens without
/// making a lowercased `String` of each (RFC 9110 §5.1: field names are case-insensitive).
enum ASCII {
    @inline(__always) static func lowercased(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c | 0x20 : c }

    /// Whether `bytes[range]` equals `lowercase` (given in lowercase) ignoring ASCII case.
    static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ lowercase: StaticString) -> Bool {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        let literal = lowercase.utf8Start
        for i in 0..<range.count where lowercased(bytes[range.lowerBound + i]) != literal[i] { return false }
        return true
    }

    /// `range` without the optional whitespace (SP, HTAB) at either end.
    static func trimmed(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Range<Int> {
        var start = range.lowerBound, end = range.upperBound
        while start < end && CharacterClass.isWhitespace(bytes[start]) { start += 1 }
        while end > start && CharacterClass.isWhitespace(bytes[end - 1]) { end -= 1 }
        return start..<end
    }

    /// The members of a comma-separated list (RFC 9110 §5.6.1), each trimmed; empty ones included.
    static func listMembers(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> [Range<Int>] {
        var members: [Range<Int>] = []
        var start = range.lowerBound
        for i in range where bytes[i] == 0x2C {
            members.append(trimmed(bytes, start..<i))
            start = i + 1
        }
        members.append(trimmed(bytes, start..<range.upperBound))
        return members
    }
}
