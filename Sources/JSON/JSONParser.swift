/// A strict JSON parser over bytes: no trailing commas, comments, NaN or leading zeros; strings
/// must be valid UTF-8 with valid escapes (lone surrogates refused); nesting is bounded so a
/// hostile body cannot exhaust the stack.
public struct JSONParser {
    public struct Failure: Error, Equatable, Sendable {
        public let message: String
        public let offset: Int
        /// Nested deeper than `maxDepth`, as opposed to malformed.
        public var tooDeep = false
        /// More than `maxContainers` objects and arrays, as opposed to malformed.
        public var tooComplex = false
    }

    /// Objects and arrays in one document, at most. Each costs an allocation, so a 1 MiB body of
    /// nothing but nested arrays (500,000 of them) took 63 ms to parse; no request of the API needs
    /// more than a few per task, and a `tasks:batch` of its 10,000 tasks fits well within this.
    public static let maxContainers = 131_072

    /// Objects and arrays nested deeper than this are refused: a hostile body cannot exhaust the
    /// stack, and no document of the API nests more than a handful of levels.
    public static let maxDepth = 64

    private let bytes: UnsafeRawBufferPointer
    private var i = 0
    private var depth = 0
    private var containers = 0

    private init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    public static func parse(_ data: [UInt8]) throws(Failure) -> JSONValue {
        let result: Result<JSONValue, Failure> = data.withUnsafeBytes { raw in
            var parser = JSONParser(raw)
            do throws(Failure) {
                parser.skipWhitespace()
                let value = try parser.value()
                parser.skipWhitespace()
                guard parser.i == raw.count else { throw parser.fail("unexpected data after the JSON value") }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private func fail(_ message: String) -> Failure { Failure(message: message, offset: i) }

    private mutating func skipWhitespace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    private mutating func value() throws(Failure) -> JSONValue {
        guard i < bytes.count else { throw fail("unexpected end of JSON") }
        switch bytes[i] {
        case 0x7B: return try object()
        case 0x5B: return try array()
        case 0x22: return .string(try string())
        case 0x74: try literal("true"); return .bool(true)
        case 0x66: try literal("false"); return .bool(false)
        case 0x6E: try literal("null"); return .null
        default: return .number(try number())
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw fail("invalid literal") }
        for k in 0..<n where bytes[i + k] != word.utf8Start[k] { throw fail("invalid literal") }
        i += n
    }

    private mutating func enter() throws(Failure) {
        containers += 1
        guard containers <= JSONParser.maxContainers else {
            var failure = fail("JSON with more than \(JSONParser.maxContainers) objects and arrays")
            failure.tooComplex = true
            throw failure
        }
        depth += 1
        guard depth <= JSONParser.maxDepth else {
            var failure = fail("JSON nested deeper than \(JSONParser.maxDepth) levels")
            failure.tooDeep = true
            throw failure
        }
    }

    private mutating func object() throws(Failure) -> JSONValue {
        try enter()
        defer { depth -= 1 }
        i += 1
        var members: [(String, JSONValue)] = []
        // Duplicate names: a scan while the object is small (every document of the API), a set
        // once it grows, so that a body of 50,000 members costs linear time, not quadratic.
        var names: Set<String>?
        skipWhitespace()
        if i < bytes.count && bytes[i] == 0x7D { i += 1; return .object(members) }
        while true {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == 0x22 else { throw fail("expected a member name") }
            let at = i
            let key = try string()
            let duplicate: Bool
            if names == nil && members.count < JSONParser.scannedMembers {
                duplicate = members.contains { $0.0 == key }
            } else {
                if names == nil { names = Set(members.map(\.0)) }
                duplicate = !names!.insert(key).inserted
            }
            if duplicate { throw Failure(message: "duplicate member \"\(key.prefix(64))\"", offset: at) }
            skipWhitespace()
            guard i < bytes.count, bytes[i] == 0x3A else { throw fail("expected ':'") }
            i += 1
            skipWhitespace()
            members.append((key, try value()))
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end of JSON") }
            if bytes[i] == 0x2C { i += 1; continue }
            if bytes[i] == 0x7D { i += 1; return .object(members) }
            throw fail("expected ',' or '}'")
        }
    }

    /// Up to this many members, duplicates are found by a scan (cheaper than hashing every name).
    static let scannedMembers = 16

    private mutating func array() throws(Failure) -> JSONValue {
        try enter()
        defer { depth -= 1 }
        i += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if i < bytes.count && bytes[i] == 0x5D { i += 1; return .array(items) }
        while true {
            skipWhitespace()
            items.append(try value())
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end of JSON") }
            if bytes[i] == 0x2C { i += 1; continue }
            if bytes[i] == 0x5D { i += 1; return .array(items) }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func number() throws(Failure) -> Double {
        let start = i
        if i < bytes.count && bytes[i] == 0x2D { i += 1 }
        guard i < bytes.count, isDigit(bytes[i]) else { throw fail("invalid value") }
        if bytes[i] == 0x30 {
            i += 1
            if i < bytes.count && isDigit(bytes[i]) { throw fail("leading zeros are not allowed") }
        } else {
            while i < bytes.count && isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count && bytes[i] == 0x2E {
            i += 1
            guard i < bytes.count, isDigit(bytes[i]) else { throw fail("invalid number") }
            while i < bytes.count && isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count && (bytes[i] == 0x65 || bytes[i] == 0x45) {
            i += 1
            if i < bytes.count && (bytes[i] == 0x2B || bytes[i] == 0x2D) { i += 1 }
            guard i < bytes.count, isDigit(bytes[i]) else { throw fail("invalid number") }
            while i < bytes.count && isDigit(bytes[i]) { i += 1 }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw fail("number out of range") }
        return value
    }

    private func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    private mutating func string() throws(Failure) -> String {
        i += 1
        let start = i
        // Fast path: no escapes. All-ASCII text (the usual case) is valid UTF-8 as it is, and
        // skips the generic validation, which cost more than the rest of parsing a string.
        var bits: UInt8 = 0
        while i < bytes.count, bytes[i] != 0x22, bytes[i] != 0x5C, bytes[i] >= 0x20 { bits |= bytes[i]; i += 1 }
        if i < bytes.count && bytes[i] == 0x22 {
            let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
            i += 1
            if bits < 0x80 { return String(decoding: slice, as: UTF8.self) }
            guard let s = String(validating: slice, as: UTF8.self) else { throw fail("invalid UTF-8 in a string") }
            return s
        }
        var out = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<i]))
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let c = bytes[i]
            if c == 0x22 { i += 1; break }
            if c < 0x20 { throw fail("control character in a string") }
            if c != 0x5C { out.append(c); i += 1; continue }
            i += 1
            guard i < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case 0x22: out.append(0x22)
            case 0x5C: out.append(0x5C)
            case 0x2F: out.append(0x2F)
            case 0x62: out.append(0x08)
            case 0x66: out.append(0x0C)
            case 0x6E: out.append(0x0A)
            case 0x72: out.append(0x0D)
            case 0x74: out.append(0x09)
            case 0x75:
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    guard i + 1 < bytes.count, bytes[i] == 0x5C, bytes[i + 1] == 0x75 else { throw fail("lone surrogate") }
                    i += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else { throw fail("lone surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    throw fail("lone surrogate")
                }
                out.append(contentsOf: Array(String(Unicode.Scalar(scalar)!).utf8))
            default:
                throw fail("invalid escape")
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8 in a string") }
        return s
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("invalid \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            default: throw fail("invalid \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }
}

extension JSONWriter {
    /// Writes a parsed value back out (configuration and headers are echoed as given).
    package mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .number(let n): double(n)
        case .string(let s): string(s)
        case .array(let items):
            beginArray()
            for item in items { self.value(item) }
            endArray()
        case .object(let members):
            beginObject()
            for (k, v) in members { key(escaping: k); self.value(v) }
            endObject()
        }
    }
}
