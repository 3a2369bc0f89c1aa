/// The byte ranges of a `Range` header (RFC 9110 §14.1.2), resolved against a size.
///
/// A hostile list costs little: past `maxRanges` ranges the header is ignored (the whole file is
/// sent, as §14.2 allows), and overlapping or adjacent ranges are coalesced (§14.3 lets a server
/// do so), so no byte goes out twice however the list is written.
enum ByteRange {
    enum Resolved: Equatable {
        case whole
        /// Sorted, disjoint, non-adjacent, inclusive.
        case parts([ClosedRange<Int>])
        case unsatisfiable
    }

    /// More ranges than a client has any need of: what servers cap (Apache's
    /// `MaxRanges` defaults to 200, some CDNs to 64) to bound a response made of many parts.
    static let maxRanges = 64

    static func resolve(_ header: String?, size: Int) -> Resolved {
        guard let header else { return .whole }
        let trimmed = header.trimmingCharacters()
        // The unit is case-insensitive (§14.1); any other unit is ignored.
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .whole }
        // Empty list elements are allowed (§5.6.1) and skipped.
        let specs = trimmed.dropFirst(6).split(separator: ",", omittingEmptySubsequences: true)
            .map { $0.trimmingCharacters() }.filter { !$0.isEmpty }
        guard !specs.isEmpty, specs.count <= maxRanges else { return .whole }
        var satisfiable: [ClosedRange<Int>] = []
        for spec in specs {
            // A range that cannot be parsed makes the whole header invalid: ignored (§14.2).
            guard let range = parse(spec) else { return .whole }
            if let r = range.resolve(size: size) { satisfiable.append(r) }
        }
        guard !satisfiable.isEmpty else { return .unsatisfiable }
        return .parts(coalesce(satisfiable))
    }

    /// One `first-last`, `first-` or `-suffix` spec.
    private enum Spec {
        case from(Int, to: Int?)
        case suffix(Int)

        func resolve(size: Int) -> ClosedRange<Int>? {
            switch self {
            case .from(let start, let end):
                guard start < size else { return nil }
                return start...min(end ?? size - 1, size - 1)
            case .suffix(let n):
                guard n > 0, size > 0 else { return nil }
                return max(0, size - n)...(size - 1)
            }
        }
    }

    private static func parse(_ spec: String) -> Spec? {
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        guard first.allSatisfy(\.isASCIIDigit), last.allSatisfy(\.isASCIIDigit) else { return nil }
        if first.isEmpty {
            guard let n = Int(last) else { return last.isEmpty ? nil : .suffix(.max) }
            return .suffix(n)
        }
        // Beyond Int's range, a number still names a position past any file.
        let start = Int(first) ?? .max
        if last.isEmpty { return .from(start, to: nil) }
        let end = Int(last) ?? .max
        guard end >= start else { return nil }
        return .from(start, to: end)
    }

    private static func coalesce(_ ranges: [ClosedRange<Int>]) -> [ClosedRange<Int>] {
        var merged: [ClosedRange<Int>] = []
        for r in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, r.lowerBound <= last.upperBound + 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                merged.append(r)
            }
        }
        return merged
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
