/// `Content-Range: bytes 100-199/1000` → 100.
enum ContentRange {
    static func start(_ header: String) -> Int64? {
        let trimmed = header.trimmed()
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        return Int64(spec[..<dash])
    }
}
