import TransferVocabulary

/// The filename of a Content-Disposition header (RFC 6266), preferring `filename*` (RFC 8187).
enum ContentDisposition {
    static func filename(_ header: String) -> String? {
        var plain: String?
        for param in header.split(separator: ";").dropFirst() {
            let kv = param.split(separator: "=", maxSplits: 1)
            guard kv.count == 2 else { continue }
            let key = String(kv[0]).trimmed().lowercased()
            var value = String(kv[1]).trimmed()
            if key == "filename*" {
                // charset'language'percent-encoded
                let pieces = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                if pieces.count == 3 { return String(pieces[2]).removingPercentEncoding() }
            } else if key == "filename" {
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                    value = String(value.dropFirst().dropLast()).replacingBackslashEscapes()
                }
                plain = value
            }
        }
        return plain.flatMap { $0.isEmpty ? nil : $0 }
    }
}

extension String {
    func replacingBackslashEscapes() -> String {
        var out = ""
        var escaped = false
        for ch in self {
            if escaped { out.append(ch); escaped = false } else if ch == "\\" { escaped = true } else { out.append(ch) }
        }
        return out
    }
}
