import CPostgres

/// The rows of one result, read by row and column in libpq's text format; the result is freed
/// with the value.
public final class PostgresRows {
    private let result: OpaquePointer

    init(_ result: OpaquePointer) {
        self.result = result
    }

    deinit { PQclear(result) }

    public var count: Int { Int(PQntuples(result)) }
    /// Rows an `INSERT`, `UPDATE` or `DELETE` touched.
    public var affected: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    public func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(result, Int32(row), Int32(column)) == 1 }

    public func text(_ row: Int, _ column: Int) -> String? {
        isNull(row, column) ? nil : String(cString: PQgetvalue(result, Int32(row), Int32(column)))
    }

    /// An integer column (NULL reads as 0).
    public func int64(_ row: Int, _ column: Int) -> Int64 {
        guard let text = text(row, column) else { return 0 }
        return Int64(text) ?? 0
    }

    /// A boolean column, `t` or `f` in the text format.
    public func bool(_ row: Int, _ column: Int) -> Bool {
        PQgetvalue(result, Int32(row), Int32(column))?.pointee == CChar(UInt8(ascii: "t"))
    }

    /// A text column's bytes as sent, without making a String of them (a JSON document).
    public func bytes(_ row: Int, _ column: Int) -> [UInt8] {
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        guard let value = PQgetvalue(result, Int32(row), Int32(column)) else { return [] }
        return value.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    /// A `bytea` column: the text format is `\x` and two hex digits a byte.
    public func bytea(_ row: Int, _ column: Int) -> [UInt8] {
        let text = bytes(row, column)
        guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return [] }
        var out: [UInt8] = []
        out.reserveCapacity((text.count - 2) / 2)
        var i = 2
        while i + 1 < text.count {
            out.append(Hex.value(text[i]) << 4 | Hex.value(text[i + 1]))
            i += 2
        }
        return out
    }
}

/// Text-format encodings of parameters: `bytea` as hex, arrays as `{…}` literals (for `unnest`).
public enum PostgresText {
    /// `bytea` input in the hex format.
    public static func bytea(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: 2 + bytes.count * 2)
        out[0] = UInt8(ascii: "\\")
        out[1] = UInt8(ascii: "x")
        for (i, b) in bytes.enumerated() {
            out[2 + 2 * i] = Hex.digits[Int(b >> 4)]
            out[3 + 2 * i] = Hex.digits[Int(b & 0xF)]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// An array literal of `values` (nil is NULL), every element quoted so any text round-trips:
    /// inside quotes only `"` and `\` need a backslash. Built as bytes: a batch's documents make
    /// a literal of megabytes, and appending characters one by one to a String cost more than
    /// the server's work on it.
    public static func array(_ values: [String?]) -> String {
        literal(values, size: { $0?.utf8.count ?? 4 }) { value, out in
            if let value { quote(value.utf8, into: &out) } else { out += "NULL".utf8 }
        }
    }

    /// The same of UTF-8 texts given as bytes (JSON documents), without making Strings of them.
    public static func array(utf8 values: [[UInt8]]) -> String {
        literal(values, size: { $0.count }) { value, out in quote(value, into: &out) }
    }

    private static func literal<T>(_ values: [T], size: (T) -> Int, element: (T, inout [UInt8]) -> Void) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(values.reduce(2) { $0 + size($1) + 3 })
        for (i, value) in values.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            element(value, &out)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    private static func quote<S: Sequence<UInt8>>(_ bytes: S, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
    }

    /// An array literal of integers.
    public static func array(_ values: [Int64?]) -> String {
        "{" + values.map { $0.map(String.init) ?? "NULL" }.joined(separator: ",") + "}"
    }
}

private enum Hex {
    static let digits = Array("0123456789abcdef".utf8)

    static func value(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: 0
        }
    }
}
