/// Content-Length and Transfer-Encoding as received, resolved into one unambiguous framing
/// (RFC 9112 §6.1–6.3). Anything a proxy in front of us might read differently is refused.
struct FramingFields {
    var contentLength: Int?
    /// The codings of every Transfer-Encoding line, in order (ranges of the head's bytes).
    var transferCodings: [Range<Int>] = []
    var hostCount = 0

    /// Each Content-Length line may hold a list (RFC 9110 §8.6); every member must be 1*DIGIT and all
    /// must agree. `+5`, `0x10`, `1 0` and differing duplicates are refused.
    mutating func addContentLength(_ bytes: UnsafeRawBufferPointer, _ value: Range<Int>) throws(HTTPProblem) {
        for member in ASCII.listMembers(bytes, value) {
            guard !member.isEmpty, member.count <= 18, member.allSatisfy({ CharacterClass.isDigit(bytes[$0]) })
            else { throw .bad("malformed Content-Length") }
            let n = member.reduce(0) { $0 * 10 + Int(bytes[$1] - 0x30) }
            if let existing = contentLength, existing != n { throw .bad("differing Content-Length values") }
            contentLength = n
        }
    }

    mutating func addTransferEncoding(_ bytes: UnsafeRawBufferPointer, _ value: Range<Int>) {
        transferCodings += ASCII.listMembers(bytes, value)
    }

    func resolve(_ bytes: UnsafeRawBufferPointer, minor: Int) throws(HTTPProblem) -> BodyFraming {
        if transferCodings.isEmpty { return .length(contentLength ?? 0) }
        guard contentLength == nil else {
            throw .bad("both Content-Length and Transfer-Encoding")
        }
        guard minor >= 1 else { throw .bad("Transfer-Encoding in an HTTP/1.0 request") }
        guard transferCodings.count == 1, ASCII.equalsIgnoringCase(bytes, transferCodings[0], "chunked") else {
            throw .bad("Transfer-Encoding other than chunked")
        }
        return .chunked
    }
}
