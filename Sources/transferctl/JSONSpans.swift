/// Parts of a JSON text cut out as the bytes the server wrote, so `--json` can print the API's
/// objects exactly, member order and nulls included, without decoding and encoding them again.
enum JSONSpans {
    typealias Text = ArraySlice<UInt8>

    /// The value of member `name` of the object `text`; nil when it has none or is no object.
    static func member(_ name: String, of text: Text) -> Text? {
        let key = Array("\"\(name)\"".utf8)
        return items(of: text, open: UInt8(ascii: "{")).first { $0.key.elementsEqual(key) }?.value
    }

    /// The elements of the array `text`; none when it is no array.
    static func elements(of text: Text) -> [Text] {
        items(of: text, open: UInt8(ascii: "[")).map(\.value)
    }

    /// The members (key with its quotes, value) of an object, or the elements (empty key) of an
    /// array, cut from `text`, which must open with `open`.
    private static func items(of text: Text, open: UInt8) -> [(key: Text, value: Text)] {
        var at = skipSpace(text, from: text.startIndex)
        guard at < text.endIndex, text[at] == open else { return [] }
        at = skipSpace(text, from: at + 1)
        var found: [(key: Text, value: Text)] = []
        while at < text.endIndex, text[at] != UInt8(ascii: "}"), text[at] != UInt8(ascii: "]") {
            var key = text[at..<at]
            if open == UInt8(ascii: "{") {
                let keyEnd = end(ofValueIn: text, at: at)
                key = text[at..<keyEnd]
                at = skipSpace(text, from: keyEnd)
                guard at < text.endIndex, text[at] == UInt8(ascii: ":") else { return found }
                at = skipSpace(text, from: at + 1)
            }
            let valueEnd = end(ofValueIn: text, at: at)
            found.append((key, text[at..<valueEnd]))
            at = skipSpace(text, from: valueEnd)
            guard at < text.endIndex, text[at] == UInt8(ascii: ",") else { break }
            at = skipSpace(text, from: at + 1)
        }
        return found
    }

    /// Where the value starting at `start` ends: past its closing quote or bracket, or at the
    /// first byte that cannot continue a number or literal.
    private static func end(ofValueIn text: Text, at start: Int) -> Int {
        var depth = 0
        var inString = false
        var escaped = false
        var at = start
        while at < text.endIndex {
            let byte = text[at]
            at += 1
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    if depth == 0 { return at }
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if depth == 0 { return at - 1 }
                depth -= 1
                if depth == 0 { return at }
            case UInt8(ascii: ","), UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                if depth == 0 { return at - 1 }
            default: break
            }
        }
        return at
    }

    private static func skipSpace(_ text: Text, from start: Int) -> Int {
        text[start...].firstIndex { ![UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t")].contains($0) }
            ?? text.endIndex
    }
}
