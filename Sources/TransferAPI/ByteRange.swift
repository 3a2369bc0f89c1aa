/// A single byte range from a `Range` header (RFC 9110 §14.1.2), resolved against a size.
/// Several ranges in one header are answered with the whole file, as §14.2 allows.
enum ByteRange {
    enum Resolved: Equatable {
        case whole
        case part(start: Int, end: Int)  // inclusive
        case unsatisfiable
    }

    static func resolve(_ header: String?, size: Int) -> Resolved {
        guard let header else { return .whole }
        let trimmed = header.trimmingCharacters()
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = trimmed.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingCharacters(), last = spec[spec.index(after: dash)...].trimmingCharacters()
        if first.isEmpty {
            // bytes=-N: the last N bytes.
            guard let n = Int(last), n > 0 else { return .unsatisfiable }
            return size == 0 ? .unsatisfiable : .part(start: max(0, size - n), end: size - 1)
        }
        guard let start = Int(first), start >= 0 else { return .whole }
        guard start < size else { return .unsatisfiable }
        if last.isEmpty { return .part(start: start, end: size - 1) }
        guard let end = Int(last), end >= start else { return .whole }
        return .part(start: start, end: min(end, size - 1))
    }
}
