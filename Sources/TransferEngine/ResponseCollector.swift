/// Assembles response heads from the lines curl's header callback delivers: a status line, field
/// lines, an empty line — once per response, redirects and `100 Continue` included.
package struct ResponseCollector {
    package enum Result {
        case pending
        case complete(status: Int, headers: [(String, String)])
    }

    private var status = 0
    private var headers: [(String, String)] = []

    package init() {}

    package mutating func consume(_ raw: UnsafeRawBufferPointer) -> Result {
        var end = raw.count
        while end > 0 && (raw[end - 1] == 0x0A || raw[end - 1] == 0x0D) { end -= 1 }
        if end == 0 {
            guard status != 0 else { return .pending }
            defer { status = 0; headers = [] }
            return .complete(status: status, headers: headers)
        }
        // Scanned as bytes, the strings made only for the name and the value: a response head is
        // a dozen lines, and each went through String splitting and trimming before.
        let line = UnsafeRawBufferPointer(rebasing: raw[0..<end])
        if line.starts(with: "HTTP/".utf8) {
            // "HTTP/1.1 200 OK" or "HTTP/2 200"
            status = ResponseCollector.statusCode(line)
            headers = []
        } else if let colon = line.firstIndex(of: 0x3A) {
            var start = colon + 1
            var stop = line.count
            while start < stop && (line[start] == 0x20 || line[start] == 0x09) { start += 1 }
            while stop > start && (line[stop - 1] == 0x20 || line[stop - 1] == 0x09) { stop -= 1 }
            headers.append((String(decoding: UnsafeRawBufferPointer(rebasing: line[..<colon]), as: UTF8.self),
                            String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<stop]), as: UTF8.self)))
        }
        return .pending
    }

    /// The three digits after the status line's first space; 0 when there are none.
    private static func statusCode(_ line: UnsafeRawBufferPointer) -> Int {
        guard let space = line.firstIndex(of: 0x20) else { return 0 }
        var code = 0
        var digits = 0
        for byte in line[(space + 1)...] {
            guard byte >= 0x30 && byte <= 0x39 else { break }
            code = code * 10 + Int(byte - 0x30)
            digits += 1
        }
        return digits == 3 ? code : 0
    }
}
