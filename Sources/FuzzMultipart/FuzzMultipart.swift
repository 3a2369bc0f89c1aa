import FuzzSupport
import JSON
import TransferCore
import TransferModel

/// transferd does not parse multipart bodies: it builds them (`multipart` on an upload task). So
/// this target fuzzes what exists: the input is the task's `multipart` object (JSON), parsed by
/// TaskCreationRequest, and the body MultipartBody builds from whatever it accepts.
///
/// Properties: the boundary delimits exactly the parts given (a field name, filename or value
/// never adds or ends a part), and every part's header section is the lines MultipartBody writes
/// (quoted names hold no quote, CR or LF, so no header or part can be injected).
@main enum FuzzMultipart {
    static let content: [UInt8] = Array("file content".utf8)

    static func main() {
        fuzzMain { input in
            guard let multipart = try? JSONParser.parse(Array(input)) else { return }
            let task: JSONValue = .object([
                ("kind", .string("upload")),
                ("request", .object([("url", .string("https://example.com/upload"))])),
                ("upload", .object([("from_blob", .string("blob"))])),
                ("multipart", multipart),
            ])
            guard let spec = (try? TaskCreationRequest.parse(task, field: "task"))?.multipart else { return }
            let body = MultipartBody(spec: spec, defaultFilename: "file.bin")
            var bytes: [UInt8] = []
            for segment in body.wrap(.bytes(content)) {
                guard case .bytes(let b) = segment else { fuzzCheck(false, "a segment is not bytes"); return }
                bytes += b
            }
            check(bytes, boundary: Array(body.boundary.utf8), fields: spec.fields.count)
        }
    }

    /// RFC 2046 §5.1.1: the body is "--boundary" CRLF part, "CRLF--boundary" CRLF part, …,
    /// "CRLF--boundary--" CRLF. Split at the delimiters and check each part's header lines.
    static func check(_ bytes: [UInt8], boundary: [UInt8], fields: Int) {
        let delimiter = Array("\r\n--".utf8) + boundary
        let parts = split(Array("\r\n".utf8) + bytes, at: delimiter)
        // Before the first delimiter: nothing; then one part per field, the file part, the close.
        fuzzCheck(parts.count == fields + 3, "\(parts.count - 3) parts for \(fields) fields and a file")
        fuzzCheck(parts.first?.isEmpty == true, "bytes before the first boundary")
        fuzzCheck(parts.last == Array("--\r\n".utf8), "the body does not end in the close delimiter")
        // On bytes, not Characters: a name may start with a combining mark, which a String would
        // join to the quote before it.
        let disposition = Array("Content-Disposition: form-data; name=\"".utf8)
        for (i, part) in parts.dropFirst().dropLast().enumerated() {
            guard let headEnd = split(part, at: Array("\r\n\r\n".utf8)).first, headEnd.count < part.count else {
                fuzzCheck(false, "part \(i) has no header end"); return
            }
            let lines = split(headEnd, at: Array("\r\n".utf8))
            let isFile = i == fields
            fuzzCheck(lines.count == (isFile ? 3 : 2) && lines[0].isEmpty, "part \(i) has \(lines.count - 1) header lines")
            fuzzCheck(lines[1].starts(with: disposition), "part \(i) disposition")
            let quotes = lines[1].count { $0 == 0x22 }
            fuzzCheck(quotes == (isFile ? 4 : 2), "part \(i) has \(quotes) quotes in its disposition")
        }
        fuzzCheck(parts[fields + 1].suffix(content.count) == content[...], "the file content is not the file part's body")
    }

    static func split(_ bytes: [UInt8], at delimiter: [UInt8]) -> [[UInt8]] {
        var parts: [[UInt8]] = [], start = 0, i = 0
        while i + delimiter.count <= bytes.count {
            if bytes[i..<i + delimiter.count].elementsEqual(delimiter) {
                parts.append(Array(bytes[start..<i]))
                i += delimiter.count
                start = i
            } else {
                i += 1
            }
        }
        parts.append(Array(bytes[start...]))
        return parts
    }
}
