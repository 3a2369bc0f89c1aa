/// Whitespace trimmed from both ends, without Foundation (tokens, settings read from files).
extension StringProtocol {
    package func trimmingCharacters() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
