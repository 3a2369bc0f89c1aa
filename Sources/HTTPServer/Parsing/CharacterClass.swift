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
