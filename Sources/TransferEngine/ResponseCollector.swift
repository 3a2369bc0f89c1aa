/// Assembles response heads from the lines curl's header callback delivers: a status line, field
/// lines, an empty line — once per response, redirects and `100 Continue` included.
struct ResponseCollector {
    package enum Result {
        case pending
        case complete(status: Int, headers: [(String, String)])
    }

    private var status = 0
    private var headers: [(String, String)] = []

    mutating func consume(_ raw: UnsafeRawBufferPointer) -> Result {
        var end = raw.count
        while end > 0 && (raw[end - 1] == 0x0A || raw[end - 1] == 0x0D) { end -= 1 }
        if end == 0 {
            guard status != 0 else { return .pending }
            defer { status = 0; headers = [] }
            return .complete(status: status, headers: headers)
        }
        let line = String(decoding: UnsafeRawBufferPointer(rebasing: raw[0..<end]), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            // "HTTP/1.1 200 OK" or "HTTP/2 200"
            let parts = line.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            headers = []
        } else if let colon = line.firstIndex(of: ":") {
            headers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmed()))
        }
        return .pending
    }
}
